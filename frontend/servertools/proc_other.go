//go:build !unix

package servertools

import "os/exec"

// setGroup does nothing here: killGroup kills the command alone.
func setGroup(*exec.Cmd) {}

// killGroup kills cmd.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// termGroup kills cmd: there is no gentler signal here.
func termGroup(cmd *exec.Cmd) { killGroup(cmd) }
