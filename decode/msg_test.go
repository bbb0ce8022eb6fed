package decode

import "testing"

func TestSpanOverlaps(t *testing.T) {
	cases := []struct {
		a, b Span
		want bool
	}{
		{Span{0, 4}, Span{4, 8}, false},
		{Span{0, 5}, Span{4, 8}, true},
		{Span{54, 60}, Span{56, 60}, true},
		{Span{60, 64}, Span{56, 60}, false},
		{MkSpan(^uint64(0)-2, 16), Span{^uint64(0) - 1, ^uint64(0)}, true}, // clipped, not wrapped
	}
	for _, c := range cases {
		if got := c.a.Overlaps(c.b); got != c.want || c.b.Overlaps(c.a) != c.want {
			t.Errorf("%v overlaps %v = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestMsghdrLayout: the x/sys sizes are struct user_msghdr and struct
// mmsghdr of the 64-bit ABIs the tracer supports (include/linux/socket.h:
// msg_len right after the msghdr, padded to 8).
func TestMsghdrLayout(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"msghdr", sizeofMsghdr, 56},
		{"mmsghdr", sizeofMmsghdr, 64},
		{"msg_len offset", offMsgLen, 56},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
			}
		})
	}
}
