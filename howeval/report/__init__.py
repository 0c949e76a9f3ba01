"""Report rendering: Markdown tables, the HTML page and the PNG plots of a run's metrics."""
