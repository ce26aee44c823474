package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// containerEnv names the spec file when the test binary is re-executed as a
// container's init (sandbox_test.go's startContainer).
const containerEnv = "TANDEM_DEPLOYTEST_CONTAINER"

func TestMain(m *testing.M) {
	if path := os.Getenv(containerEnv); path != "" {
		err := containerInit(path)
		fmt.Fprintf(os.Stderr, "container init: %v\n", err)
		os.Exit(127)
	}
	code := m.Run()
	if tandemBuild.dir != "" {
		_ = os.RemoveAll(tandemBuild.dir)
	}
	os.Exit(code)
}

// containerInit runs in the container's new mount and UTS namespaces and in
// its pod's network namespace (nsenter put it there): it builds the root
// filesystem, becomes the container's user and executes its command. It
// returns only on error.
func containerInit(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s containerSpec
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	root := filepath.Join(s.Root, "merged")
	for _, d := range []string{"upper", "work", "merged"} {
		if err := os.MkdirAll(filepath.Join(s.Root, d), 0o755); err != nil {
			return err
		}
	}
	// The image: this machine's root filesystem (without its other mounts),
	// with the container's writes in its own upper layer.
	opts := fmt.Sprintf("lowerdir=/,upperdir=%s,workdir=%s", filepath.Join(s.Root, "upper"), filepath.Join(s.Root, "work"))
	if err := syscall.Mount("overlay", root, "overlay", 0, opts); err != nil {
		return fmt.Errorf("overlay root: %w", err)
	}
	for _, d := range s.ImageDirs {
		p, err := inRoot(root, d.Path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		if err := os.Chown(p, d.UID, d.GID); err != nil {
			return err
		}
		if err := os.Chmod(p, d.Mode); err != nil {
			return err
		}
	}
	sys := []struct {
		source, target, fstype string
		flags                  uintptr
	}{
		{"proc", "/proc", "proc", syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC},
		{"/dev", "/dev", "", syscall.MS_BIND | syscall.MS_REC},
		{"/sys", "/sys", "", syscall.MS_BIND | syscall.MS_REC},
		{"tmpfs", "/run", "tmpfs", syscall.MS_NOSUID | syscall.MS_NODEV},
		{"tmpfs", "/tmp", "tmpfs", syscall.MS_NOSUID | syscall.MS_NODEV},
	}
	for _, m := range sys {
		p, err := inRoot(root, m.target)
		if err != nil {
			return err
		}
		if err := syscall.Mount(m.source, p, m.fstype, m.flags, ""); err != nil {
			return fmt.Errorf("mount %s: %w", m.target, err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o1777); err != nil {
		return err
	}
	for _, m := range append(append([]mountSpec{}, s.ImageFiles...), s.Mounts...) {
		if err := bindMount(root, m); err != nil {
			return err
		}
	}
	if s.ReadOnlyRoot {
		if err := syscall.Mount("", root, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("read-only root: %w", err)
		}
	}
	if err := syscall.Chroot(root); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	dir := s.Dir
	if dir == "" {
		dir = "/"
	}
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	if s.Hostname != "" {
		if err := syscall.Sethostname([]byte(s.Hostname)); err != nil {
			return err
		}
	}
	if s.NoNewPrivs {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, 38 /* PR_SET_NO_NEW_PRIVS */, 1, 0); e != 0 {
			return fmt.Errorf("no_new_privs: %w", e)
		}
	}
	if err := syscall.Setgroups(s.Groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(s.GID); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setuid(s.UID); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	argv0, err := lookPath(s.Argv[0], s.Env)
	if err != nil {
		return err
	}
	return syscall.Exec(argv0, s.Argv, s.Env)
}

// bindMount binds m.Source (a path on this machine) at m.Target inside root,
// creating the mount point (a file for a file) in the overlay.
func bindMount(root string, m mountSpec) error {
	fi, err := os.Stat(m.Source)
	if err != nil {
		return fmt.Errorf("mount %s: %w", m.Target, err)
	}
	p, err := inRoot(root, m.Target)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		err = os.MkdirAll(p, 0o755)
	} else if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
		var f *os.File
		if f, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			err = f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("mount point %s: %w", m.Target, err)
	}
	if err := syscall.Mount(m.Source, p, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("mount %s at %s: %w", m.Source, m.Target, err)
	}
	if m.ReadOnly {
		if err := syscall.Mount("", p, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("mount %s read-only: %w", m.Target, err)
		}
	}
	return nil
}

// inRoot resolves path inside root as the container will see it: symbolic
// links (such as /var/run → /run) are followed within root, never out of it.
func inRoot(root, path string) (string, error) {
	cur := "/"
	rest := strings.Split(strings.Trim(filepath.Clean("/"+path), "/"), "/")
	for hops := 0; len(rest) > 0; {
		part := rest[0]
		rest = rest[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(filepath.Join(root, next))
		if errors.Is(err, fs.ErrNotExist) {
			cur = next // created later, as a directory or file
			continue
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("%s: too many symbolic links", path)
		}
		link, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(link) {
			cur = "/"
		}
		rest = append(strings.Split(strings.Trim(link, "/"), "/"), rest...)
	}
	return filepath.Join(root, cur), nil
}

// lookPath finds a command the way the container's shell would, with the
// container's PATH.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in PATH %s", name, path)
}
