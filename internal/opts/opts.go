// Package opts fills the options a caller left unset with their defaults.
package opts

// Positive sets *p to def when *p is zero or negative: an unset size, count
// or duration (options whose zero and negative values mean nothing else).
func Positive[T ~int | ~int64](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}
