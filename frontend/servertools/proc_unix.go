//go:build unix

package servertools

import (
	"os/exec"
	"syscall"
)

// setGroup starts cmd in a process group of its own, so that killing it
// kills what its shell started too (else `sh -c "sleep 100"` outlives the
// timeout and holds the output pipe open).
func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills cmd's process group, and cmd itself should it have
// left the group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
	}
}

// termGroup asks cmd's process group to exit (SIGTERM).
func termGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
}
