"""The bounded analysis and the trees it reads, below the worker and on-demand, which both use them.

- sources: a repository's tree at one commit through GitHub (GitHubTree: listings, blobs, the blob
  cache), the changed paths, the external consumers' workflows;
- bounded: one analysis (the PR check, a /run-rocm selection) in a child process under a wall-clock
  and a memory limit (run_check_bounded, LimitExceeded);
- server: the credential-free interpreter each child is forked from
  (`python -m bot.analysis.server FD`), and child, the fork's side;
- slots: analysis slots shared fairly between installations, across processes.
"""
