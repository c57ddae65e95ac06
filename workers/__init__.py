"""Stateful match hosts; `workers.games` is the pure rules core they run.

Importing this package first sets how gRPC's core does its I/O (`workers.grpc_core`): it reads that once,
when `grpc` is first imported, so every tablehall process (the CLI, servers, workers, benches) imports this
package before `grpc` (`tablehall`, `gateway` and `ratings` import it first).
"""

from workers import grpc_core as _grpc_core

_grpc_core.configure()
