"""The Lobby: registered players, the rated quick-pairing queue, open challenges and friend links."""
