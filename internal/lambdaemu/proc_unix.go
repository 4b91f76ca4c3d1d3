//go:build unix

package lambdaemu

import (
	"errors"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the bootstrap (or its launcher) in its own process group, so that a kill
// takes whatever it started with it (Lambda discards the whole execution environment).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcess sends SIGKILL to the bootstrap's process group: a launcher and the bootstrap it runs
// as a child die together.
func killProcess(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
