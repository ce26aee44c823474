package servertools

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// exec_shell_command's limits and defaults, as llama-server's.
const (
	execMaxOutput      = 16 << 10
	execMaxTimeout     = 60 // seconds
	execDefaultTimeout = 10 // seconds
)

// get_info's limits.
const (
	infoMaxOutput = 4096
	infoTimeout   = 5 * time.Second
)

func execShellCommandTool() *Tool {
	return &Tool{Name: "exec_shell_command", DisplayName: "Execute shell command", Write: true, Stream: true, invoke: execShellCommand,
		Definition: function("exec_shell_command", "Execute a shell command and return its output (stdout and stderr combined).",
			map[string][2]string{
				"command":         {"string", "Shell command to execute"},
				"timeout":         {"integer", fmt.Sprintf("Timeout in seconds (default %d, max %d)", execDefaultTimeout, execMaxTimeout)},
				"max_output_size": {"integer", fmt.Sprintf("Maximum output size in bytes (default %d)", execMaxOutput)},
			}, "command")}
}

func execShellCommand(ctx context.Context, c call) (any, error) {
	p := struct {
		Command   *string `json:"command"`
		Timeout   int     `json:"timeout"`
		MaxOutput int     `json:"max_output_size"`
	}{Timeout: execDefaultTimeout, MaxOutput: execMaxOutput}
	if err := decode(c.params, &p); err != nil {
		return nil, err
	}
	if p.Command == nil {
		return nil, missing("command")
	}
	timeout := time.Duration(min(p.Timeout, execMaxTimeout)) * time.Second
	maxOutput := p.MaxOutput
	if maxOutput < 0 || maxOutput > execMaxOutput {
		maxOutput = execMaxOutput
	}
	args := []string{"sh", "-c", *p.Command}
	if c.emit == nil {
		res := c.fs.run(ctx, args, maxOutput, timeout, nil)
		return text(res.Output + exitNote(res)), nil
	}
	alive := true
	res := c.fs.run(ctx, args, maxOutput, timeout, func(chunk string) bool {
		alive = alive && c.emit(chunk)
		return alive
	})
	if alive && ctx.Err() == nil {
		c.emit(exitNote(res))
	}
	return nil, nil
}

// exitNote ends a command's output: its exit code, and whether the
// timeout ended it.
func exitNote(res procResult) string {
	s := fmt.Sprintf("\n[exit code: %d]", res.ExitCode)
	if res.TimedOut {
		s += " [exit due to timed out]"
	}
	return s
}

func getInfoTool() *Tool {
	return &Tool{Name: "get_info", DisplayName: "Get Runtime Info", invoke: getInfo,
		Definition: function("get_info", "Returns runtime info: the OS name/version and the current working directory", map[string][2]string{})}
}

func getInfo(ctx context.Context, c call) (any, error) {
	osInfo := "unknown"
	if res := c.fs.run(ctx, []string{"uname", "-a"}, infoMaxOutput, infoTimeout, nil); res.ExitCode == 0 && !res.TimedOut {
		osInfo = strings.TrimSpace(res.Output)
	}
	cwd := c.env.Cwd
	switch {
	case cwd != "":
	case !c.fs.isolated():
		cwd, _ = os.Getwd()
	default:
		cwd = "unknown"
		if res := c.fs.run(ctx, []string{"pwd"}, infoMaxOutput, infoTimeout, nil); res.ExitCode == 0 && !res.TimedOut {
			cwd = strings.TrimSpace(res.Output)
		}
	}
	return map[string]any{"os": osInfo, "cwd": cwd}, nil
}
