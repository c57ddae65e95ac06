"""The pure rules core: no I/O, no clock reads, no randomness of its own (DESIGN.md "The pure core")."""
