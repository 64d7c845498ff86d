"""`trainforge data ...`: the commands about data sources, contracts and data versions."""

from __future__ import annotations

import typer

from trainforge.cli import _data_profile, _data_validate, _data_versions

data_app = typer.Typer(no_args_is_help=True, help="Data: validate against a contract, profile, "
                       "drift; versions: snapshot, list, show, diff, checkout and tag.")
data_app.command("validate")(_data_validate.data_validate)
data_app.command("profile")(_data_profile.data_profile)
data_app.command("drift")(_data_profile.data_drift)
data_app.command("snapshot")(_data_versions.data_snapshot)
data_app.command("list")(_data_versions.data_list)
data_app.command("show")(_data_versions.data_show)
data_app.command("diff")(_data_versions.data_diff)
data_app.command("checkout")(_data_versions.data_checkout)
data_app.command("tag")(_data_versions.data_tag)
