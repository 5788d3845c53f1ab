"""OpenSearch: a live cluster read without writing (live.py: point-in-time paging with
search_after, scroll where the cluster has no point-in-time API), and documents saved
to files (files.py). What the documents mean (Data Prepper spans and logs, LiteLLM
payloads) is the families' business."""
