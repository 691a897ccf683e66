"""The cluster page: a read-only, live view of nodes, pending pods, gangs, a pod's
`explain` and throughput, served by the daemon's HTTP server at `/`.

    routes.py   mount_web(app, deps): GET / (the page), /static/* (its CSS and JS),
                GET /stream (the WebSocket the page lives on)
    stream.py   one WebSocket: token check, the store's watch with resume from a
                resourceVersion, explain requests, throughput samples and Permit waiters
    snapshot.py a new page's first picture: the watch's replay as frames of rows, nodes
                first, one at a time, cached per resourceVersion
    columns.py  a pod or node as a row of columns (what the page shows), and back
    feed.py     pure pieces: what a pod or node contributes to the page (requests,
                allocatable parsed as the scheduler parses them), throughput samples,
                the Permit waiting room as the page shows it
    static/     index.html, app.css, app.js: plain files, no build step, no CDN
"""
from transport.web.routes import WebDeps, mount_web

__all__ = ["WebDeps", "mount_web"]
