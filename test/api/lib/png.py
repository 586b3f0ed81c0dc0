"""Small PNGs made by hand for the tests (logos of styles): chunks, RGBA images."""
import struct
import zlib


def _chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))


def png_rgba(w, h, pixel, text=None):
    """An RGBA PNG whose pixel (x, y) is pixel(x, y) (r, g, b, a), with a tEXt chunk."""
    raw = b"".join(b"\0" + b"".join(bytes(pixel(x, y)) for x in range(w)) for y in range(h))
    out = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
    if text:
        out += _chunk(b"tEXt", b"Comment\0" + text)
    return out + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b"")


def logo_png(text=None, colour=(160, 20, 30)):
    """A 48 x 48 logo: a disc (dark red unless colour says) on a transparent square."""
    def px(x, y):
        inside = (x - 24) ** 2 + (y - 24) ** 2 < 20 ** 2
        return tuple(colour) + (255,) if inside else (0, 0, 0, 0)
    return png_rgba(48, 48, px, text)
