//go:build linux && cgo

package nvml

import (
	"fmt"
	"os"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Devices returns the GPUs this process may use (CUDA_VISIBLE_DEVICES
// applied), in CUDA ordinal order. Without a driver the error wraps
// ErrUnavailable.
func Devices() ([]Device, error) {
	s, err := Probe()
	return s.Devices, err
}

// Probe reads the driver version and the visible devices.
func Probe() (System, error) {
	env, set := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	return probe(gonvml.New(), env, set)
}

// probe does Probe's work over lib, which tests replace with go-nvml's
// mock machines. Return codes are printed as numbers: formatting them by
// name needs the library, which may be missing (go-nvml #82).
func probe(lib gonvml.Interface, env string, set bool) (System, error) {
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		if ret == gonvml.ERROR_LIBRARY_NOT_FOUND || ret == gonvml.ERROR_DRIVER_NOT_LOADED {
			return System{}, fmt.Errorf("%w (NVML return %d)", ErrUnavailable, int(ret))
		}
		return System{}, fmt.Errorf("nvml: init: return %d", int(ret))
	}
	defer lib.Shutdown()
	var s System
	if v, ret := lib.SystemGetDriverVersion(); ret == gonvml.SUCCESS {
		s.DriverVersion = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == gonvml.SUCCESS {
		s.CUDADriverVersion = v
	}
	n, ret := lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return s, fmt.Errorf("nvml: device count: return %d", int(ret))
	}
	handles := make([]gonvml.Device, n)
	uuids := make([]string, n)
	for i := range n {
		h, ret := lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			return s, fmt.Errorf("nvml: device %d: return %d", i, int(ret))
		}
		handles[i] = h
		uuids[i], _ = h.GetUUID() // "" when unreadable: matches no UUID entry
	}
	for ordinal, i := range ParseVisible(env, set, uuids) {
		d, err := describe(handles[i])
		if err != nil {
			return s, fmt.Errorf("nvml: device %d: %w", i, err)
		}
		d.Index, d.NVMLIndex, d.UUID = ordinal, i, uuids[i]
		s.Devices = append(s.Devices, d)
	}
	return s, nil
}

// describe reads one device's name, memory and compute capability.
func describe(h gonvml.Device) (Device, error) {
	var d Device
	var ret gonvml.Return
	if d.Name, ret = h.GetName(); ret != gonvml.SUCCESS {
		return d, fmt.Errorf("name: return %d", int(ret))
	}
	mem, ret := h.GetMemoryInfo()
	if ret != gonvml.SUCCESS {
		return d, fmt.Errorf("memory info: return %d", int(ret))
	}
	d.MemoryTotal, d.MemoryFree = mem.Total, mem.Free
	if d.ComputeMajor, d.ComputeMinor, ret = h.GetCudaComputeCapability(); ret != gonvml.SUCCESS {
		return d, fmt.Errorf("compute capability: return %d", int(ret))
	}
	return d, nil
}
