"""Links that open the course in a language: /course/<edition>, e.g. /course/zh-CN (a Jupyter server
extension).

A Binder badge can only name a URL path, and JupyterLab has no URL option for its language. Opening
/course/zh-CN sets the student's JupyterLab language setting to the edition's locale (its language
pack) and opens the edition's start page; /course/en does the same in English. The editions are
course.toml's, as the installed helpers know them (`helpers.course.editions`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from jupyter_core.paths import jupyter_config_dir
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web

SETTING = Path("@jupyterlab", "translation-extension", "plugin.jupyterlab-settings")


def settings_dir() -> Path:
    return Path(os.environ.get("JUPYTERLAB_SETTINGS_DIR") or Path(jupyter_config_dir()) / "lab" / "user-settings")


class CourseLink(JupyterHandler):
    @web.authenticated
    def get(self, name: str):
        from helpers.course import edition

        try:
            chosen = edition(name)
        except ValueError:
            raise web.HTTPError(404) from None
        locale, start = chosen["lab_locale"], chosen["start"]
        path = settings_dir() / SETTING
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"locale": locale}))
        self.redirect(url_path_join(self.base_url, "lab", "tree", start))


def _jupyter_server_extension_points():
    return [{"module": "course_links"}]


def _load_jupyter_server_extension(serverapp):
    pattern = url_path_join(serverapp.web_app.settings["base_url"], r"/course/([^/]+)")
    serverapp.web_app.add_handlers(".*$", [(pattern, CourseLink)])
