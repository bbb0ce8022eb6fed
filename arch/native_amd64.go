package arch

// Native is the register layout of the running binary.
var Native = X86_64
