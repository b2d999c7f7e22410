"""What people read: Markdown tables for the README and the self-contained HTML report."""
