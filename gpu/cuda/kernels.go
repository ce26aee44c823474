//go:build cuda

package cuda

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"os"
)

// EnvKernels names a kernel image file (PTX, cubin or fatbin, e.g. one
// nvcc built on the GPU machine) to load instead of the embedded ones, or
// picks one embedded image: "ptx" (JIT-compiled by the driver) or "cubin".
const EnvKernels = "TANDEM_CUDA_KERNELS"

// The compiled kernels, built from kernels/*.cu by `make kernels`
// (scripts/kernels.sh) and committed; kernels/MANIFEST records the
// compilers and a hash of the sources (TestKernelArtefactsFresh checks it).
//
//go:embed kernels/tandem.ptx.gz kernels/tandem_sm90.cubin.gz
var artefacts embed.FS

// image is one candidate kernel module.
type image struct {
	name string
	load func() ([]byte, error)
}

// kernelImages lists the module images to try on a device of compute
// capability major.minor, best first.
func kernelImages(major, minor int) []image {
	cubin := image{"embedded sm_90 cubin (nvcc)", func() ([]byte, error) {
		return gunzip("kernels/tandem_sm90.cubin.gz")
	}}
	ptx := image{fmt.Sprintf("embedded PTX (clang, JIT for sm_%d%d)", major, minor), func() ([]byte, error) {
		b, err := gunzip("kernels/tandem.ptx.gz")
		return append(b, 0), err // the driver reads PTX as a C string
	}}
	switch path := os.Getenv(EnvKernels); path {
	case "ptx":
		return []image{ptx}
	case "cubin":
		return []image{cubin}
	case "":
		if major == 9 {
			return []image{cubin, ptx}
		}
		return []image{ptx}
	default:
		return []image{{"$" + EnvKernels + " (" + path + ")", func() ([]byte, error) {
			b, err := os.ReadFile(path)
			return append(b, 0), err // NUL-terminated in case it is PTX
		}}}
	}
}

func gunzip(name string) ([]byte, error) {
	f, err := artefacts.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var b bytes.Buffer
	if _, err := io.Copy(&b, z); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b.Bytes(), nil
}
