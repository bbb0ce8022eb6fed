package procfs

import "testing"

func TestProcNetIP(t *testing.T) {
	cases := []struct{ in, want string }{
		{"0100007F", "127.0.0.1"},
		{"00000000", "0.0.0.0"},
		{"0100000A", "10.0.0.1"},
		{"00000000000000000000000001000000", "::1"},
		{"00000000000000000000000000000000", "::"},
		{"0000000000000000FFFF00000100007F", "127.0.0.1"}, // ::ffff:127.0.0.1
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			ip, err := NetIP(c.in)
			if err != nil || ip.String() != c.want {
				t.Errorf("NetIP(%q) = %v, %v; want %s", c.in, ip, err, c.want)
			}
		})
	}
	for _, bad := range []string{"", "0100007", "0100007G", "0100007F00"} {
		if _, err := NetIP(bad); err == nil {
			t.Errorf("NetIP(%q): no error", bad)
		}
	}
}
