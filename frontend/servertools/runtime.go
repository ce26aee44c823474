package servertools

import (
	"fmt"
	"strings"
)

// containerEngines are the engines whose `exec` drives a container; both
// take the same verbs in the same order.
var containerEngines = []string{"docker", "podman"}

// openFsys is the fsys for one call: the host when runtime is "", else
// the isolate it names. An unknown runtime is an error, never the host:
// the caller asked for an isolate.
func openFsys(cwd, runtime string) (fsys, error) {
	if runtime == "" {
		return host{cwd: cwd}, nil
	}
	if bin, arg, attach, ok := parseContainer(runtime); ok {
		if !attach {
			return nil, fmt.Errorf("tool runtime must name a running container: %s", runtime)
		}
		if !validContainerID(arg) {
			return nil, fmt.Errorf("invalid container id: %s", arg)
		}
		return isolate{cwd: cwd, wrap: containerArgv(bin, arg)}, nil
	}
	if target, ok := strings.CutPrefix(runtime, "ssh:"); ok {
		if !validSSHTarget(target) {
			return nil, fmt.Errorf("invalid ssh target: %s", target)
		}
		return isolate{cwd: cwd, wrap: sshArgv(target)}, nil
	}
	return nil, fmt.Errorf("unknown tool runtime: %s", runtime)
}

// CheckRuntime validates --tools-runtime. Only an existing isolate can be
// named (docker-container:ID, podman-container:ID, ssh:TARGET):
// llama-server's docker:IMAGE, a container it spawns and owns, is not
// served here.
func CheckRuntime(runtime string) error {
	if bin, image, attach, ok := parseContainer(runtime); ok && !attach {
		return fmt.Errorf("tool runtime %s: spawning a container is not supported; start one (%s run -d %s sleep infinity) and name it as %s-container:ID",
			runtime, bin, image, bin)
	}
	_, err := openFsys("", runtime)
	return err
}

// parseContainer reads "<engine>-container:<id>" (attach) or
// "<engine>:<image>".
func parseContainer(spec string) (bin, arg string, attach, ok bool) {
	for _, bin := range containerEngines {
		if id, ok := strings.CutPrefix(spec, bin+"-container:"); ok {
			return bin, id, true, true
		}
		if image, ok := strings.CutPrefix(spec, bin+":"); ok {
			return bin, image, false, true
		}
	}
	return "", "", false, false
}

// validContainerID: an id that starts with '-' would become an engine
// option (--privileged).
func validContainerID(id string) bool {
	return id != "" && isAlnum(id[0]) && strings.IndexFunc(id, func(r rune) bool {
		return r > 0x7f || !isAlnum(byte(r)) && !strings.ContainsRune(".-_", r)
	}) < 0
}

// validSSHTarget: ssh reads options from its argv, so a target starting
// with '-' (-oProxyCommand=...) would run a command on the host.
func validSSHTarget(t string) bool {
	return t != "" && t[0] != '-' && strings.IndexFunc(t, func(r rune) bool {
		return r > 0x7f || !isAlnum(byte(r)) && !strings.ContainsRune(".-_@", r)
	}) < 0
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// containerArgv runs a command in a running container.
func containerArgv(bin, id string) func(inner []string, stdin bool) []string {
	return func(inner []string, stdin bool) []string {
		argv := []string{bin, "exec"}
		if stdin {
			argv = append(argv, "-i")
		}
		return append(append(argv, id), inner...)
	}
}

// sshArgv runs a command on a remote host: key authentication only, a
// host key trusted beforehand (no prompt could be answered), and the
// command quoted as one word, since the remote shell parses it again.
func sshArgv(target string) func(inner []string, stdin bool) []string {
	return func(inner []string, stdin bool) []string {
		argv := []string{"ssh", "-o", "BatchMode=yes", "-o", "PasswordAuthentication=no",
			"-o", "KbdInteractiveAuthentication=no", "-o", "StrictHostKeyChecking=yes"}
		if !stdin {
			argv = append(argv, "-n")
		}
		return append(argv, target, shellQuote(inner))
	}
}

// shellQuote joins argv into one string a POSIX shell splits back into
// exactly argv.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
