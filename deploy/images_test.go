package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// image is the stand-in for a container image: how the image runs (its
// ENTRYPOINT, CMD, USER, WORKDIR and ENV) and the files this machine lends
// it. Everything else of its filesystem is this machine's root (an overlay,
// container_test.go): Debian with libzmq5, Python 3 and Prometheus, which is
// what the images the deploy files name have too.
type image struct {
	ref        string
	entrypoint []string
	cmd        []string
	uid, gid   int
	home       string
	workdir    string
	env        []string
	files      []mountSpec // e.g. the tandem binary at /usr/local/bin/tandem
	dirs       []imageDir
	gpu        bool // a CUDA image: this machine runs its engines on the CPU
}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// images resolves image references to stand-ins for one test.
type images struct {
	t *testing.T
}

// tandemBuild is the tandem binary, built once for every test of the
// package, outside /tmp (containers mount their own) and readable by the
// containers' users.
var tandemBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

var (
	tandemImage     = regexp.MustCompile(`(^|/)tandem:`)
	prometheusImage = regexp.MustCompile(`^(docker\.io/)?prom/prometheus:`)
	pythonImage     = regexp.MustCompile(`^(docker\.io/)?(library/)?python:3`)
)

// errNoStandIn is an image this machine cannot run (the caller may skip the
// container, saying so).
type errNoStandIn struct{ ref, why string }

func (e errNoStandIn) Error() string { return fmt.Sprintf("image %s: %s", e.ref, e.why) }

// resolve returns the stand-in for ref.
func (im *images) resolve(ref string) (image, error) {
	switch {
	case tandemImage.MatchString(ref):
		dockerfile := "Dockerfile"
		if strings.HasSuffix(ref, "-cuda") {
			dockerfile = "Dockerfile.cuda"
		}
		bin, err := im.tandemBinary()
		if err != nil {
			return image{}, err
		}
		img, err := fromDockerfile(im.t, dockerfile, bin)
		img.ref = ref
		img.gpu = dockerfile == "Dockerfile.cuda"
		return img, err
	case pythonImage.MatchString(ref):
		// Debian's python3 with pip stands in for the official image's.
		return image{ref: ref, cmd: []string{"python3"}, home: "/root", workdir: "/",
			env: []string{"PATH=" + defaultPath, "LANG=C.UTF-8"}}, nil
	case prometheusImage.MatchString(ref):
		bin, err := exec.LookPath("prometheus")
		if err != nil {
			return image{}, errNoStandIn{ref, "no prometheus binary here (Debian package prometheus)"}
		}
		// As the official image: nobody, data in /prometheus.
		return image{ref: ref, entrypoint: []string{"/bin/prometheus"},
			cmd: []string{"--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"},
			uid: 65534, gid: 65534, home: "/home", workdir: "/prometheus", env: []string{"PATH=" + defaultPath},
			files: []mountSpec{{Source: bin, Target: "/bin/prometheus", ReadOnly: true}},
			dirs:  []imageDir{{Path: "/prometheus", UID: 65534, GID: 65534, Mode: 0o755}}}, nil
	}
	return image{}, errNoStandIn{ref, "no stand-in for it on this machine"}
}

// tandemBinary builds cmd/tandem once.
func (im *images) tandemBinary() (string, error) {
	b := &tandemBuild
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("/var/tmp", "tandem-deploytest-bin-"); b.err != nil {
			return
		}
		if b.err = os.Chmod(b.dir, 0o755); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "tandem")
		if out, err := exec.Command("go", "build", "-o", b.path, "../cmd/tandem").CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building tandem: %v\n%s", err, out)
		}
	})
	return b.path, b.err
}

var homeDirFlag = regexp.MustCompile(`--home-dir\s+(\S+)`)

// fromDockerfile reads how the image of a Dockerfile's last stage runs, and
// lends it bin at the path the stage copies the tandem binary to.
func fromDockerfile(t *testing.T, file, bin string) (image, error) {
	img := image{env: []string{"PATH=" + defaultPath}, workdir: "/", home: "/"}
	stages := 0
	ins := dockerInstructions(t, file)
	for _, in := range ins {
		if in.op == "FROM" {
			stages++
		}
	}
	stage := 0
	for _, in := range ins {
		if in.op == "FROM" {
			stage++
			continue
		}
		if stage < stages {
			continue
		}
		switch in.op {
		case "USER":
			u, g, _ := strings.Cut(in.args, ":")
			img.uid, _ = strconv.Atoi(u)
			img.gid, _ = strconv.Atoi(g)
		case "WORKDIR":
			img.workdir = in.args
		case "ENTRYPOINT", "CMD":
			var argv []string
			if err := json.Unmarshal([]byte(in.args), &argv); err != nil {
				return img, fmt.Errorf("%s %s: want the exec (JSON) form: %w", file, in.op, err)
			}
			if in.op == "ENTRYPOINT" {
				img.entrypoint = argv
			} else {
				img.cmd = argv
			}
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				if strings.Contains(kv, "=") && !strings.HasPrefix(kv, "PATH=") {
					img.env = append(img.env, kv)
				}
			}
		case "RUN":
			if m := homeDirFlag.FindStringSubmatch(in.args); m != nil {
				img.home = m[1]
			}
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) >= 3 && strings.HasPrefix(f[0], "--from=") && strings.HasSuffix(f[1], "/tandem") {
				img.files = append(img.files, mountSpec{Source: bin, Target: f[len(f)-1], ReadOnly: true})
			}
		}
	}
	if len(img.files) == 0 {
		return img, fmt.Errorf("%s: its last stage copies no tandem binary", file)
	}
	img.dirs = append(img.dirs, imageDir{Path: img.workdir, UID: img.uid, GID: img.gid, Mode: 0o755})
	if img.home != "/" && img.home != img.workdir {
		img.dirs = append(img.dirs, imageDir{Path: img.home, UID: img.uid, GID: img.gid, Mode: 0o755})
	}
	return img, nil
}

// argv is what a container runs: its command (else the image's
// ENTRYPOINT), then its args (else, without a command, the image's CMD), as
// Kubernetes and Compose both define it.
func (img image) argv(command, args []string, argsSet bool) []string {
	if len(command) > 0 {
		return append(append([]string{}, command...), args...)
	}
	if !argsSet {
		args = img.cmd
	}
	return append(append([]string{}, img.entrypoint...), args...)
}
