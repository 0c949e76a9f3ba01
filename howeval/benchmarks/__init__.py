"""Benchmarks: manifest loaders (PatternEval rows), CRYSTAL step metrics and Delphi references, AdaptMMBench."""
