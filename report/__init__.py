"""What people read: Markdown tables for the README and docs pages, and the self-contained HTML report."""
