//go:build !unix

package lambdaemu

import (
	"errors"
	"os"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

// killProcess kills the bootstrap process.
func killProcess(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := cmd.Process.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}
