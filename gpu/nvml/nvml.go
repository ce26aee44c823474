package nvml

import (
	"errors"
	"strconv"
	"strings"
)

// ErrUnavailable reports that NVML cannot be used: no NVIDIA driver, or a
// build without cgo.
var ErrUnavailable = errors.New("nvml: no NVIDIA driver found")

// Device is one GPU visible to this process.
type Device struct {
	Index        int    `json:"index"`         // CUDA ordinal after CUDA_VISIBLE_DEVICES: the N of cuda:N
	NVMLIndex    int    `json:"nvml_index"`    // NVML's index (PCI bus order), ignoring CUDA_VISIBLE_DEVICES
	UUID         string `json:"uuid"`          // "GPU-…"
	Name         string `json:"name"`          // e.g. "NVIDIA H200"
	MemoryTotal  uint64 `json:"memory_total"`  // bytes
	MemoryFree   uint64 `json:"memory_free"`   // bytes, when probed
	ComputeMajor int    `json:"compute_major"` // compute capability, e.g. 9 for sm_90
	ComputeMinor int    `json:"compute_minor"`
}

// System is the driver and its visible devices.
type System struct {
	DriverVersion     string   `json:"driver_version"`      // e.g. "580.159.03"
	CUDADriverVersion int      `json:"cuda_driver_version"` // e.g. 13000 for CUDA 13.0
	Devices           []Device `json:"devices"`             // in CUDA ordinal order
}

// ParseVisible applies CUDA_VISIBLE_DEVICES (value env, set reports
// whether the variable exists) to numDevices devices whose UUIDs are
// uuids ([numDevices], NVML order). It returns the NVML indices that are
// visible, in CUDA ordinal order. Like the CUDA driver: an unset variable
// shows every device, an empty one none; entries are NVML indices or UUIDs
// ("GPU-…", any unique prefix); the list ends at the first entry that is
// invalid, ambiguous or repeated.
func ParseVisible(env string, set bool, uuids []string) []int {
	if !set {
		all := make([]int, len(uuids))
		for i := range all {
			all[i] = i
		}
		return all
	}
	var visible []int
	seen := map[int]bool{}
	for _, e := range strings.Split(env, ",") {
		i, ok := resolve(strings.TrimSpace(e), uuids)
		if !ok || seen[i] {
			break
		}
		seen[i] = true
		visible = append(visible, i)
	}
	return visible
}

// resolve maps one CUDA_VISIBLE_DEVICES entry to an NVML index.
func resolve(e string, uuids []string) (int, bool) {
	if e == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(e); err == nil {
		return n, n >= 0 && n < len(uuids)
	}
	if !strings.HasPrefix(e, "GPU-") {
		return 0, false // MIG-… and other forms are not supported
	}
	found, n := 0, 0
	for i, u := range uuids {
		if strings.HasPrefix(u, e) {
			found, n = i, n+1
		}
	}
	return found, n == 1
}
