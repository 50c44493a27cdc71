"""Subsampled PLDs (Zhu–Dong–Wang 2022, Thm. 10)."""
