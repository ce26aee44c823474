package deploy

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// composeFile is the part of the Compose file format the checks read.
type composeFile struct {
	Services map[string]struct {
		Image       string            `json:"image"`
		Command     []string          `json:"command"`
		Entrypoint  []string          `json:"entrypoint"`
		Volumes     []string          `json:"volumes"`
		Ports       []string          `json:"ports"`
		Environment map[string]string `json:"environment"`
		Build       *struct {
			Context    string `json:"context"`
			Dockerfile string `json:"dockerfile"`
		} `json:"build"`
	} `json:"services"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	raw, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return c
}

// TestCompose: one frontend and two engines run real tandem commands with
// real flags, the frontend's --engines reach the engines' --listen ports,
// Prometheus scrapes the frontend, and every file mounted exists.
func TestCompose(t *testing.T) {
	env := loadEnv(t)
	c := loadCompose(t)
	byCmd := map[string][]string{} // tandem command → services
	listen := map[string]int{}     // engine service → ROUTER port
	var frontend parsedArgs
	var frontendSvc string
	for name, svc := range c.Services {
		for _, v := range svc.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("service %s mounts %s: %v", name, src, err)
				}
			}
		}
		if svc.Build != nil {
			if _, err := os.Stat(filepath.Join(svc.Build.Context, svc.Build.Dockerfile)); err != nil {
				t.Errorf("service %s builds %s: %v", name, svc.Build.Dockerfile, err)
			}
		}
		if !strings.HasPrefix(svc.Image, "tandem:") || svc.Entrypoint != nil {
			continue // not a tandem command line (a shell script runs keygen; TestComposeServes runs it)
		}
		a, err := parseArgs(svc.Command, env.flags)
		if err != nil {
			t.Errorf("service %s: %v", name, err)
			continue
		}
		byCmd[a.cmd] = append(byCmd[a.cmd], name)
		switch a.cmd {
		case "engine":
			listen[name] = endpointPort(t, name+" --listen", a.flags["listen"])
			if a.flags["kv-cache-memory"] == "" {
				t.Errorf("service %s: set --kv-cache-memory (in a container the default reads the host's memory)", name)
			}
		case "frontend":
			frontend, frontendSvc = a, name
		}
	}
	if len(byCmd["engine"]) != 2 || len(byCmd["frontend"]) != 1 {
		t.Fatalf("want two engine services and one frontend, got %v", byCmd)
	}
	var reached []string
	for _, ep := range strings.Split(frontend.flags["engines"], ",") {
		rest, ok := strings.CutPrefix(ep, "tcp://")
		host, port, err := net.SplitHostPort(rest)
		if !ok || err != nil {
			t.Errorf("frontend --engines %q: want tcp://service:port", ep)
			continue
		}
		if p, ok := listen[host]; !ok || fmt.Sprint(p) != port {
			t.Errorf("frontend --engines %s: no engine service %s listening on %s (engines %v)", ep, host, port, listen)
		}
		reached = append(reached, host)
	}
	if len(reached) != len(listen) {
		t.Errorf("frontend --engines reaches %v, engines are %v", reached, byCmd["engine"])
	}
	if frontend.flags["host"] != "0.0.0.0" {
		t.Errorf("frontend --host %q: a container must listen on 0.0.0.0", frontend.flags["host"])
	}
	port := frontend.flags["port"]
	published := false
	for _, p := range c.Services[frontendSvc].Ports {
		published = published || strings.HasSuffix(p, ":"+port)
	}
	if !published {
		t.Errorf("frontend port %s is not published (%v)", port, c.Services[frontendSvc].Ports)
	}

	// Prometheus scrapes the frontend's port.
	raw, err := os.ReadFile("prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var prom struct {
		ScrapeConfigs []struct {
			MetricsPath   string `json:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &prom); err != nil {
		t.Fatal(err)
	}
	want := frontendSvc + ":" + port
	scraped := false
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, tg := range st.Targets {
				scraped = scraped || tg == want && (sc.MetricsPath == "" || env.routes[sc.MetricsPath])
			}
		}
	}
	if !scraped {
		t.Errorf("prometheus.yml does not scrape %s/metrics", want)
	}
}

// TestDockerfiles checks what a build cannot check here (there is no
// Docker engine): multi-stage, cgo with libzmq, a slim runtime with libzmq5,
// a non-root user, the binary as entrypoint, the frontend's port exposed.
func TestDockerfiles(t *testing.T) {
	tests := []struct {
		file         string
		buildFrom    string // prefix of the first FROM
		runtimeFrom  string // prefix of the last FROM
		buildMention []string
	}{
		{"Dockerfile", "rust:", "debian:bookworm-slim", []string{"libzmq3-dev", "pkg-config", "scripts/llguidance.sh", "CGO_ENABLED=1", "go build", "./cmd/tandem"}},
		{"Dockerfile.cuda", "golang:", "nvidia/cuda:${CUDA_VERSION}-runtime", []string{"libzmq3-dev", "scripts/llguidance.sh", "CGO_ENABLED=1", "-tags cuda", "./cmd/tandem"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ins := dockerInstructions(t, tt.file)
			var froms []string
			for _, in := range ins {
				if in.op == "FROM" {
					froms = append(froms, in.args)
				}
			}
			if len(froms) < 2 || !strings.HasPrefix(froms[0], tt.buildFrom) || !strings.HasPrefix(froms[len(froms)-1], tt.runtimeFrom) {
				t.Fatalf("FROM %v: want a %s… build stage and a %s… runtime stage", froms, tt.buildFrom, tt.runtimeFrom)
			}
			var build, runtime strings.Builder
			stage := 0
			var user, entrypoint, expose string
			var copied []string
			for _, in := range ins {
				if in.op == "FROM" {
					stage++
					continue
				}
				if stage < len(froms) {
					fmt.Fprintln(&build, in.args)
					continue
				}
				fmt.Fprintln(&runtime, in.args)
				switch in.op {
				case "USER":
					user = in.args
				case "ENTRYPOINT":
					entrypoint = in.args
				case "EXPOSE":
					expose = in.args
				case "COPY":
					copied = append(copied, in.args)
				}
			}
			for _, s := range tt.buildMention {
				if !strings.Contains(build.String(), s) {
					t.Errorf("build stages do not mention %q", s)
				}
			}
			if !strings.Contains(runtime.String(), "libzmq5") || strings.Contains(runtime.String(), "libzmq3-dev") {
				t.Errorf("runtime stage: want libzmq5 and no build packages")
			}
			if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
				t.Errorf("USER %q: want a non-root user", user)
			}
			if len(copied) != 1 || !strings.HasPrefix(copied[0], "--from=") {
				t.Errorf("runtime COPY %v: want the binary only, from the build stage", copied)
			}
			dst := ""
			if len(copied) == 1 {
				f := strings.Fields(copied[0])
				dst = f[len(f)-1]
			}
			if entrypoint != fmt.Sprintf("[%q]", dst) {
				t.Errorf("ENTRYPOINT %s: want [%q], the copied binary", entrypoint, dst)
			}
			if expose != "8000" {
				t.Errorf("EXPOSE %q: want 8000, the frontend's default port", expose)
			}
		})
	}
}

type dockerInstruction struct{ op, args string }

var dockerLine = regexp.MustCompile(`^([A-Za-z]+)\s+(.*)$`)

// dockerInstructions reads a Dockerfile's instructions, joining
// continuation lines and dropping comments.
func dockerInstructions(t *testing.T, file string) []dockerInstruction {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []dockerInstruction
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || line == "" && cur.Len() == 0 {
			continue
		}
		if l, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(l + " ")
			continue
		}
		cur.WriteString(line)
		m := dockerLine.FindStringSubmatch(cur.String())
		cur.Reset()
		if m == nil {
			t.Fatalf("%s: cannot read %q", file, line)
		}
		out = append(out, dockerInstruction{op: strings.ToUpper(m[1]), args: strings.TrimSpace(m[2])})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDashboardQueriesParse runs every dashboard query through promtool's
// PromQL parser (as recording rules), with Grafana's variables filled in.
func TestDashboardQueriesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian package prometheus)")
	}
	fill := strings.NewReplacer("$__rate_interval", "1m", "$__range", "1h", "$__interval", "15s", "$model_name", ".*")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range loadDashboard(t).queries() {
		if strings.HasPrefix(q, "label_values(") {
			continue // Grafana's, not PromQL
		}
		fmt.Fprintf(&b, "      - record: dashboard:query%d\n        expr: %q\n", i, fill.Replace(q))
	}
	f := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}
