//go:build !linux || !cgo

package nvml

// Devices reports ErrUnavailable: this build has no NVML (it needs cgo on
// Linux).
func Devices() ([]Device, error) { return nil, ErrUnavailable }

// Probe reports ErrUnavailable, like Devices.
func Probe() (System, error) { return System{}, ErrUnavailable }
