"""A scheduler extender in a few lines of aiohttp (the extender/v1 JSON protocol).

    python examples/extender.py --listen 127.0.0.1:8888 --require-label zone=a
    python examples/extender.py --listen 127.0.0.1:8889 --prefer-label disk=ssd

Name it in the scheduler's configuration (see configs/extenders.yaml):
filter keeps the nodes carrying --require-label; prioritize gives 10 (the
extender maximum) to nodes carrying --prefer-label and 0 to the others.
"""
import argparse

from aiohttp import web


def has(node: dict, label: str) -> bool:
    key, _, value = label.partition("=")
    return (node.get("metadata", {}).get("labels") or {}).get(key) == value


def make_app(require: str | None, prefer: str | None) -> web.Application:
    async def filter_(request: web.Request) -> web.Response:
        nodes = (await request.json())["nodes"]["items"]
        kept = [n for n in nodes if require is None or has(n, require)]
        failed = {n["metadata"]["name"]: f"example extender: node lacks label {require}"
                  for n in nodes if n not in kept}
        return web.json_response({"nodes": {"items": kept}, "failedNodes": failed})

    async def prioritize(request: web.Request) -> web.Response:
        nodes = (await request.json())["nodes"]["items"]
        return web.json_response([{"host": n["metadata"]["name"], "score": 10 if prefer and has(n, prefer) else 0}
                                  for n in nodes])

    app = web.Application()
    app.router.add_post("/filter", filter_)
    app.router.add_post("/prioritize", prioritize)
    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:8888", help="host:port")
    parser.add_argument("--require-label", help="filter: keep only nodes with this key=value label")
    parser.add_argument("--prefer-label", help="prioritize: favour nodes with this key=value label")
    args = parser.parse_args()
    host, _, port = args.listen.rpartition(":")
    web.run_app(make_app(args.require_label, args.prefer_label), host=host, port=int(port), print=None)
