package engineclient

import "testing"

func TestPublicEndpoint(t *testing.T) {
	tests := []struct{ pub, router, want string }{
		{"ipc:///run/tandem/events-0.sock", "ipc:///run/tandem/engine-0.sock", "ipc:///run/tandem/events-0.sock"},
		{"tcp://0.0.0.0:5556", "tcp://10.0.0.7:5555", "tcp://10.0.0.7:5556"},
		{"tcp://*:5556", "tcp://engine-1.svc:5555", "tcp://engine-1.svc:5556"},
		{"tcp://[::]:5556", "tcp://[fd00::7]:5555", "tcp://[fd00::7]:5556"},
		{"tcp://10.0.0.8:5556", "tcp://10.0.0.7:5555", "tcp://10.0.0.8:5556"},
		{"tcp://0.0.0.0:5556", "ipc:///run/x.sock", "tcp://127.0.0.1:5556"},
	}
	for _, tt := range tests {
		if got := publicEndpoint(tt.pub, tt.router); got != tt.want {
			t.Errorf("publicEndpoint(%q, %q) = %q, want %q", tt.pub, tt.router, got, tt.want)
		}
	}
}
