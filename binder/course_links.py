"""Links that open the course in a language: /course/en and /course/zh-CN (a Jupyter server extension).

A Binder badge can only name a URL path, and JupyterLab has no URL option for its language. Opening
/course/zh-CN sets the student's JupyterLab language setting to Chinese (its zh-CN language pack)
and opens the Chinese edition's start page; /course/en does the same in English.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from jupyter_core.paths import jupyter_config_dir
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web

EDITIONS = {
    "en": ("en", "notebooks/attention/00_start_here.ipynb"),
    "zh-CN": ("zh_CN", "notebooks/attention_zh/00_start_here.ipynb"),
}
SETTING = Path("@jupyterlab", "translation-extension", "plugin.jupyterlab-settings")


def settings_dir() -> Path:
    return Path(os.environ.get("JUPYTERLAB_SETTINGS_DIR") or Path(jupyter_config_dir()) / "lab" / "user-settings")


class CourseLink(JupyterHandler):
    @web.authenticated
    def get(self, edition: str):
        if edition not in EDITIONS:
            raise web.HTTPError(404)
        locale, start = EDITIONS[edition]
        path = settings_dir() / SETTING
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"locale": locale}))
        self.redirect(url_path_join(self.base_url, "lab", "tree", start))


def _jupyter_server_extension_points():
    return [{"module": "course_links"}]


def _load_jupyter_server_extension(serverapp):
    pattern = url_path_join(serverapp.web_app.settings["base_url"], r"/course/(en|zh-CN)")
    serverapp.web_app.add_handlers(".*$", [(pattern, CourseLink)])
