// Package deploy holds what operators run Tandem with, and the tests that
// keep it honest. It has no code of its own: its tests read the files next
// to it.
//
//	Dockerfile, Dockerfile.cuda   the image (CPU; CUDA with -tags cuda)
//	compose.yaml                  CURVE keygen, one frontend, two engine cores, Prometheus, Grafana
//	helm/tandem                   the Helm chart (engine StatefulSet, frontend Deployment + HPA, CURVE keygen hook, …)
//	k8s/                          the chart rendered: tandem.yaml (GPU), tandem-cpu.yaml (CPU)
//	grafana/tandem.json           the dashboard; grafana/provisioning for compose
//	prometheus/prometheus.yml     compose's scrape config
//
// The tests render the chart with a small Helm-compatible template renderer
// (text/template plus the handful of Helm and sprig functions the chart
// uses; the Helm SDK costs minutes of build time), check the committed
// k8s/ output against it, decode every manifest strictly into k8s.io/api
// types (unknown fields fail), and check the invariants that tie the
// pieces together: ports and flags, probes and routes, the frontends'
// --engines and the headless Service, image tags, resources, the HPA and
// the ServiceMonitor targets, and that every PromQL query of the dashboard
// names a metric frontend/metrics registers. Flags and routes are read from
// the sources of cmd/tandem and frontend/server, so a renamed flag fails
// here.
//
// Regenerate k8s/ after changing the chart:
//
//	go test ./deploy -run TestRenderedManifestsInSync -update
//
// (or `helm template tandem deploy/helm/tandem --namespace tandem
// --kube-version 1.30 [-f deploy/helm/tandem/values-cpu.yaml]`, which the
// test accepts as well: it compares objects, not bytes).
//
// The files are also started, not only read (serve_test.go): the rendered
// chart with both values files (Helm's order: the CURVE keygen hook Job
// first), each committed manifest (kubectl apply's order) and compose.yaml
// (loaded by compose-go, Docker Compose's loader) run every container as
// written, as a local process in its own network namespace on a bridge,
// with its volumes, Secrets, environment, user and read-only root; then
// every frontend must answer /health, a chat completion in one session
// whose prefix every later frontend finds cached, and /v1/engines with
// every engine ready. The harness is a small container runtime
// (sandbox_test.go, container_test.go), a one-node kubelet and API server
// (kubelet_test.go, kubepod_test.go, kubeapi_test.go), compose's `up`
// (composerun_test.go) and the images' stand-ins (images_test.go). It needs
// root (network and mount namespaces) and the model's wheel (make wheels);
// elsewhere those tests skip and say why.
//
// It must not be imported: it is not a library. Its tests import
// frontend/metrics (for the registered metric names) and nothing of
// enginecore or gpu.
package deploy
