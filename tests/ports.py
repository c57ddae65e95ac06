"""The tests' ports: tablehall/ports.py (outside the kernel's ephemeral range)."""

from tablehall.ports import free_port, free_ports

__all__ = ["free_port", "free_ports"]
