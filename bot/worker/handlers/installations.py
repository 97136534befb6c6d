"""Installations: record where the App is installed, and which repositories it may see."""

from __future__ import annotations

from gidgethub.routing import Router

from bot.store import service as store

router = Router()


def _repositories(items) -> list[str]:
    return [r["full_name"] for r in items or () if isinstance(r, dict) and r.get("full_name")]


def _record(event, ctx, *, suspended=False, deleted=False, with_repositories=False):
    inst = event.data["installation"]
    account = inst.get("account") or {}
    store.record_installation(
        ctx.store_url, installation_id=inst["id"], account=account.get("login") or account.get("slug") or "?",
        target_type=inst.get("target_type"), repository_selection=inst.get("repository_selection"),
        suspended=suspended, deleted=deleted,
        repositories=_repositories(event.data.get("repositories")) if with_repositories else None)


@router.register("installation", action="created")
async def installed(event, ctx):
    _record(event, ctx, with_repositories=True)


@router.register("installation", action="new_permissions_accepted")
@router.register("installation", action="unsuspend")
async def refreshed(event, ctx):
    _record(event, ctx)


@router.register("installation", action="suspend")
async def suspended(event, ctx):
    _record(event, ctx, suspended=True)


@router.register("installation", action="deleted")
async def uninstalled(event, ctx):
    _record(event, ctx, deleted=True)


@router.register("installation_repositories", action="added")
@router.register("installation_repositories", action="removed")
async def repositories_changed(event, ctx):
    inst = event.data["installation"]
    _record(event, ctx)
    store.set_installation_repositories(
        ctx.store_url, inst["id"],
        added=_repositories(event.data.get("repositories_added")),
        removed=_repositories(event.data.get("repositories_removed")))
