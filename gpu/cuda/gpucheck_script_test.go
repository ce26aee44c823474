//go:build cuda

package cuda

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGPUCheckLocatesLibraries runs gpu-check's library search over fake
// trees (GPU_CHECK_ROOT): libcuda.so.1 where the driver installs it,
// cuBLASLt in the toolkit's or a pip wheel's directory, .13 before .12,
// and a TANDEM_CUBLASLT already set kept; nothing installed says so.
func TestGPUCheckLocatesLibraries(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	sitePkgs := strings.TrimSpace(run(t, "python3", "-c", "import site; print(site.getsitepackages()[0])"))
	for _, tc := range []struct {
		name        string
		files       []string // under the fake root
		cublasLt    string   // TANDEM_CUBLASLT set before
		wantCuda    string   // under the fake root; "" = not found
		wantLt      string
		ldLibPrefix string
	}{
		{name: "nothing installed"},
		{name: "Debian driver, CUDA 12 wheel",
			files:    []string{"/usr/lib/x86_64-linux-gnu/libcuda.so.1", sitePkgs + "/nvidia/cublas/lib/libcublasLt.so.12"},
			wantCuda: "/usr/lib/x86_64-linux-gnu/libcuda.so.1", wantLt: sitePkgs + "/nvidia/cublas/lib/libcublasLt.so.12"},
		{name: "container toolkit driver, CUDA 13 wheel before a 12 toolkit",
			files: []string{"/usr/local/nvidia/lib64/libcuda.so.1", "/usr/local/cuda/lib64/libcublasLt.so.12.8.4.1",
				sitePkgs + "/nvidia/cu13/lib/libcublasLt.so.13"},
			wantCuda: "/usr/local/nvidia/lib64/libcuda.so.1", wantLt: sitePkgs + "/nvidia/cu13/lib/libcublasLt.so.13"},
		{name: "TANDEM_CUBLASLT kept",
			files:    []string{"/usr/lib64/libcuda.so.1", "/usr/local/cuda/lib64/libcublasLt.so.13"},
			cublasLt: "/opt/mine/libcublasLt.so.13", wantCuda: "/usr/lib64/libcuda.so.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("bash", "../../scripts/gpu-check.sh", "locate")
			cmd.Env = append(os.Environ(), "GPU_CHECK_ROOT="+root, "TANDEM_CUBLASLT="+tc.cublasLt, "LD_LIBRARY_PATH=")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			want := "libcuda: not found\n"
			if tc.wantCuda != "" {
				want = "libcuda: " + root + tc.wantCuda + "\n"
			}
			switch {
			case tc.cublasLt != "":
				want += "cuBLASLt: " + tc.cublasLt + "\n"
			case tc.wantLt != "":
				want += "cuBLASLt: " + root + tc.wantLt + "\n"
			default:
				want += "cuBLASLt: not found\n"
			}
			if string(out) != want {
				t.Errorf("got\n%s\nwant\n%s", out, want)
			}
		})
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Skipf("%s: %v", name, err)
	}
	return string(out)
}

// TestGPUCheckDryRun prepares what a device run carries (the test and
// bench binaries, tandem with its shared libraries, the cut default
// model) and runs the device script's steps here: the CUDA tests on the
// emulator, tandem gpus and tandem serve answering a chat completion and
// an embedding (on CPU engines: no GPU here). A step that fails fails
// the test, so the script cannot rot between device runs.
func TestGPUCheckDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds three binaries")
	}
	for _, tool := range []string{"bash", "go", "gzip", "tar", "ldd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	prep := exec.Command("bash", "../../scripts/gpu-check.sh", "prepare")
	if out, err := prep.CombinedOutput(); err != nil {
		t.Fatalf("prepare: %v\n%s", err, out)
	} else {
		t.Logf("prepare:\n%s", out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	out := t.TempDir()
	cmd := exec.Command("bash", "../../scripts/gpu-check.sh", "dry-run")
	cmd.Env = append(os.Environ(), "OUT="+out, fmt.Sprintf("GPU_CHECK_PORT=%d", port))
	log, err := cmd.CombinedOutput()
	verdict, _ := os.ReadFile(filepath.Join(out, "verdict.txt"))
	if err != nil {
		t.Fatalf("dry run: %v\n%s\nverdict:\n%s", err, tail(log, 4000), verdict)
	}
	for _, want := range []string{"kernel + backend tests (cubin)       PASS", "benchmarks                           SKIP"} {
		if !strings.Contains(string(verdict), want) {
			t.Errorf("verdict lacks %q:\n%s", want, verdict)
		}
	}
	if _, err := os.Stat("../../models/SmolLM2-135M-Instruct.Q4_1.gguf"); err == nil && !strings.Contains(string(verdict), "tandem gpus + serve (chat, embeddings) PASS") {
		t.Errorf("the serve step did not pass:\n%s", verdict)
	}
	t.Logf("verdict:\n%s", verdict)
}

func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }
