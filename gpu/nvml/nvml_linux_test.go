//go:build linux && cgo

package nvml

import (
	"errors"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/google/go-cmp/cmp"
)

func TestProbeMockH200(t *testing.T) {
	lib := dgxh200.New()
	uuid := func(i int) string {
		h, _ := lib.DeviceGetHandleByIndex(i)
		u, _ := h.GetUUID()
		return u
	}
	h200 := func(index, nvmlIndex int) Device {
		return Device{
			Index: index, NVMLIndex: nvmlIndex, UUID: uuid(nvmlIndex),
			Name: "NVIDIA H200 141GB HBM3e", MemoryTotal: 144384 << 20, ComputeMajor: 9,
		}
	}
	tests := []struct {
		name string
		env  string
		set  bool
		want []Device
	}{
		{"all eight", "", false, []Device{h200(0, 0), h200(1, 1), h200(2, 2), h200(3, 3), h200(4, 4), h200(5, 5), h200(6, 6), h200(7, 7)}},
		{"indices renumbered", "5,2", true, []Device{h200(0, 5), h200(1, 2)}},
		{"by UUID", uuid(6) + ",3", true, []Device{h200(0, 6), h200(1, 3)}},
		{"none", "", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := probe(lib, tt.env, tt.set)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, s.Devices); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
			if s.DriverVersion != "550.54.15" || s.CUDADriverVersion != 12040 {
				t.Errorf("driver %q / CUDA %d, want 550.54.15 / 12040", s.DriverVersion, s.CUDADriverVersion)
			}
		})
	}
}

func TestProbeErrors(t *testing.T) {
	tests := []struct {
		name        string
		init        gonvml.Return
		count       gonvml.Return
		unavailable bool
	}{
		{"no library", gonvml.ERROR_LIBRARY_NOT_FOUND, gonvml.SUCCESS, true},
		{"driver not loaded", gonvml.ERROR_DRIVER_NOT_LOADED, gonvml.SUCCESS, true},
		{"other init failure", gonvml.ERROR_UNKNOWN, gonvml.SUCCESS, false},
		{"count fails", gonvml.SUCCESS, gonvml.ERROR_GPU_IS_LOST, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := &mock.Interface{
				InitFunc:                       func() gonvml.Return { return tt.init },
				ShutdownFunc:                   func() gonvml.Return { return gonvml.SUCCESS },
				SystemGetDriverVersionFunc:     func() (string, gonvml.Return) { return "1", gonvml.SUCCESS },
				SystemGetCudaDriverVersionFunc: func() (int, gonvml.Return) { return 13000, gonvml.SUCCESS },
				DeviceGetCountFunc:             func() (int, gonvml.Return) { return 0, tt.count },
			}
			_, err := probe(lib, "", false)
			if err == nil {
				t.Fatal("probe succeeded, want an error")
			}
			if got := errors.Is(err, ErrUnavailable); got != tt.unavailable {
				t.Errorf("errors.Is(%v, ErrUnavailable) = %v, want %v", err, got, tt.unavailable)
			}
		})
	}
}

// TestDevicesWithoutDriver runs the real NVML loader: on a machine
// without a driver it must report ErrUnavailable rather than crash.
func TestDevicesWithoutDriver(t *testing.T) {
	devs, err := Devices()
	switch {
	case errors.Is(err, ErrUnavailable):
		if len(devs) != 0 {
			t.Errorf("ErrUnavailable with %d devices", len(devs))
		}
	case err != nil:
		t.Fatalf("Devices: %v", err)
	default:
		t.Logf("driver present: %d visible devices", len(devs))
		for i, d := range devs {
			if d.Index != i || d.UUID == "" || d.MemoryTotal == 0 {
				t.Errorf("device %d: %+v", i, d)
			}
		}
	}
}
