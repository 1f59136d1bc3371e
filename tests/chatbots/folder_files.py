"""Small files of every type the chats read, written into a test's folder: a PDF (pypdf
reads it; written by hand, a page per string), an HTML page, Markdown with headings, text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def tiny_pdf(pages: Sequence[str]) -> bytes:
    """A valid PDF with one page per string (lines at 14 pt, Helvetica)."""
    n = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{kids}] /Count {n} >>"]
    for i, text in enumerate(pages):
        lines = [
            "(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") Tj T*"
            for line in text.split("\n")
        ]
        stream = "\n".join(["BT", "/F1 12 Tf", "72 720 Td", "14 TL", *lines, "ET"])
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {3 + 2 * n} 0 R >> >> >>"
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    trailer = f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return out + trailer.encode()


HTML = (
    "<html><head><title>Ropeworks history</title></head><body>"
    "<h1>Veldmark Ropeworks</h1><p>Founded in 1840 by Marit Hallendor in Kelmsby. It made "
    "ropes for ships and for the harbour of the town.</p>"
    "<h2>Later years</h2><p>The works closed in 1931 after a fire destroyed the main hall "
    "and the archive of the company.</p></body></html>"
)
MARKDOWN = (
    "A note before any heading.\n\n# Marit Hallendor\n\nBorn in Kelmsby in 1811.\n\n"
    "## Family\n\nShe had two sons.\n\n```\n# not a heading\n```\n"
)
EXPECTED = [
    ("guide/manual.pdf#0", "manual › page 1"),
    ("guide/manual.pdf#1", "manual › page 2"),
    ("notes.md#0", "notes"),
    ("notes.md#1", "notes › Marit Hallendor"),
    ("notes.md#2", "notes › Family"),
    ("rope_history.html#0", "rope history › Veldmark Ropeworks"),
    ("rope_history.html#1", "rope history › Later years"),
    ("zelnov.txt#0", "zelnov"),
]
"""(id, title) of the passages of :func:`write_folder`'s files."""


def write_folder(folder: Path) -> Path:
    """One file of each type (a PDF in a subfolder) into ``folder``; ``folder``."""
    (folder / "guide").mkdir(parents=True)
    (folder / "guide" / "manual.pdf").write_bytes(
        tiny_pdf(["Installing the rope winder\nThe winder needs oil.", "Clean the spindle."])
    )
    (folder / "rope_history.html").write_text(HTML)
    (folder / "notes.md").write_text(MARKDOWN)
    (folder / "zelnov.txt").write_text("Zelnov is a town on the river Alpha.")
    return folder
