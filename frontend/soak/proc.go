package soak

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Proc is one server process.
type Proc struct {
	PID  int
	Name string // e.g. "serve", "frontend", "engine-1": the tandem subcommand and rank
}

// ProcessTree returns root and all its descendants, read from
// /proc/PID/task/*/children (Linux). Processes that vanish meanwhile are skipped.
func ProcessTree(root int) []Proc {
	var out []Proc
	queue := []int{root}
	seen := map[int]bool{}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		name, ok := procName(pid)
		if !ok {
			continue
		}
		out = append(out, Proc{PID: pid, Name: name})
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// procName names a process after its command line: the tandem subcommand, with
// "-RANK" for an engine given --data-parallel-rank.
func procName(pid int) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return "", false
	}
	args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
	name := filepath.Base(args[0])
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		name = args[1]
	}
	for i, a := range args {
		if rank, ok := strings.CutPrefix(a, "--data-parallel-rank="); ok {
			return name + "-" + rank, true
		}
		if a == "--data-parallel-rank" && i+1 < len(args) {
			return name + "-" + args[i+1], true
		}
	}
	return name, true
}

// RSS returns a process's resident set size (VmRSS in /proc/PID/status).
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("soak: /proc/%d/status: VmRSS %q: %w", pid, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("soak: /proc/%d/status: no VmRSS", pid)
}
