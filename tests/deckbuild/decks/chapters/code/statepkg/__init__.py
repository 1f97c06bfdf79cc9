"""Module state a method mutates (like tt.PALETTE.update in the real deck)."""


class Palette(dict):
    def recolour(self, name, value):
        self[name] = value


PALETTE = Palette(query="blue", key="orange")
