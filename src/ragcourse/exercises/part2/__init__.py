"""Exercise sets of Part 2 (lessons 07-16, the retrieval pipeline): one module a lesson."""
