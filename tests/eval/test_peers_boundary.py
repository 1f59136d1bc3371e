"""The framework peers are the one place in the core that imports LlamaIndex or Haystack, and
they load the framework only when a peer is built."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.conftest import REPO_ROOT

FRAMEWORKS = ("llama_index", "haystack", "haystack_integrations")
PEERS = REPO_ROOT / "rag_multihop" / "eval" / "peers"


def _imported_roots(path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_only_the_peers_import_a_framework():
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for path in sorted((REPO_ROOT / "rag_multihop").rglob("*.py"))
        if PEERS not in path.parents and _imported_roots(path) & set(FRAMEWORKS)
    ]
    assert offenders == []


def test_listing_the_methods_imports_no_framework():
    code = (
        "import sys\n"
        "from rag_multihop.eval.methods import available_methods\n"
        "names = sorted(n for n in available_methods() if n.startswith(('li-', 'hs-')))\n"
        f"print(names, [m for m in {FRAMEWORKS!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names = ["hs-joiner-dbsf", "hs-joiner-rrf", "li-fusion-dbsf", "li-fusion-relative"]
    assert out.stdout.strip() == f"{[*names, 'li-fusion-rrf']} []"


def test_a_peer_without_its_framework_names_the_install_command():
    code = (
        "import sys\n"
        "sys.modules['llama_index'] = None  # as if LlamaIndex were not installed\n"
        "from rag_multihop.eval.methods import get_method\n"
        "try:\n"
        "    get_method('li-fusion-rrf').build(None)\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "runs llama-index-core, which is not installed" in out.stdout
    assert "pip install 'rag-multihop[peers]'" in out.stdout
