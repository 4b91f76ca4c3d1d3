package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockHolder names the process holding the write lock (an exclusive flock)
// on the file at path, as "process 123: quickstart -fresh", from
// /proc/locks; "" when it cannot tell.
func lockHolder(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	dev := uint64(st.Dev) // uint32 on some architectures
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	file := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(locks), "\n") {
		// "1: FLOCK  ADVISORY  WRITE 20889 fe:00:9986050 0 EOF"; waiters have "->".
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" || f[3] != "WRITE" || f[5] != file {
			continue
		}
		pid, err := strconv.Atoi(f[4])
		if err != nil {
			continue
		}
		return describeProcess(pid)
	}
	return ""
}

// describeProcess is "process <pid>: <command line>", the command line
// shortened.
func describeProcess(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if err != nil || len(args) == 0 || args[0] == "" {
		return fmt.Sprintf("process %d", pid)
	}
	args[0] = filepath.Base(args[0])
	cmd := strings.Join(args, " ")
	if len(cmd) > 80 {
		cmd = cmd[:77] + "..."
	}
	return fmt.Sprintf("process %d: %s", pid, cmd)
}
