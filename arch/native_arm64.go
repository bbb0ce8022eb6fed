package arch

// Native is the register layout of the running binary.
var Native = AArch64
