"""Stateful match hosts; `workers.games` is the pure rules core they run."""
