"""``import dpcompose`` stays light: SciPy is imported on first use (issue 14; time in benchmarks/)."""

from __future__ import annotations

import subprocess
import sys


def test_import_loads_no_scipy() -> None:
    code = "import sys, dpcompose; print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_scipy_backed_functions_still_work() -> None:
    import dpcompose as dp

    assert dp.accounting.optimal_epsilon([0.1] * 20, None, 1e-6) < 2
    assert 0 < dp.analysis.clopper_pearson(5, 10, 0.05)[0] < 0.5
