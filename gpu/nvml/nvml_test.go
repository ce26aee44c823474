package nvml

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseVisible(t *testing.T) {
	uuids := []string{"GPU-aaaa-1111", "GPU-aabb-2222", "GPU-cccc-3333", "GPU-dddd-4444"}
	tests := []struct {
		name string
		env  string
		set  bool
		want []int
	}{
		{"unset shows all", "", false, []int{0, 1, 2, 3}},
		{"empty shows none", "", true, nil},
		{"indices in the given order", "2,0", true, []int{2, 0}},
		{"spaces are trimmed", " 3 , 1", true, []int{3, 1}},
		{"full UUID", "GPU-cccc-3333", true, []int{2}},
		{"unique UUID prefix", "GPU-dd,GPU-aab", true, []int{3, 1}},
		{"ambiguous prefix ends the list", "1,GPU-aa,2", true, []int{1}},
		{"out of range ends the list", "0,7,1", true, []int{0}},
		{"negative ends the list", "-1,0", true, nil},
		{"repeat ends the list", "1,1,2", true, []int{1}},
		{"MIG entries are not supported", "MIG-1234", true, nil},
		{"garbage ends the list", "0,x,1", true, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseVisible(tt.env, tt.set, uuids)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseVisible(%q, %v) (-want +got):\n%s", tt.env, tt.set, diff)
			}
		})
	}
}
