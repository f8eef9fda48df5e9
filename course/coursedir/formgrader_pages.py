"""A Jupyter server extension: nbgrader's formgrader saves a grade, or its page says it did not.

The formgrader's grading page saves each score and comment as it is typed, with requests to
its API, and showed nothing when one failed. Here:

1. Opened from a link with the token, the page saves. The server keeps the login of a link with
   the token in a cookie whose path is the server's base URL; nbgrader's pages gave it an empty
   path, so the browser kept it for the page's own folder only (/formgrader/submissions/<id>),
   and the page's requests to /formgrader/api/ went out without it and were sent to the log-in
   page. Here every login cookie is kept for the server's base URL, as the server intends.
2. Whatever failed (a log-in that expired, a server stopped, a gradebook that refused), the page
   says so: a request of the page that fails puts a red note at its top naming what did not
   reach the gradebook, and every score and comment field is locked, so nothing more is typed
   into a page that cannot save it.
3. An address the formgrader does not have (a mistyped one) gets the server's 404 page and one
   line in the log; nbgrader's own answer failed before it knew the user, and logged a traceback.
"""

from jinja2 import DictLoader
from jupyter_server.base.handlers import JupyterHandler
from nbgrader.server_extensions.formgrader.handlers import Template404
from tornado import web
from tornado.ioloop import IOLoop

NOT_SAVED_ID = "course-not-saved"  # the note's element id
FORMGRADE = "course_formgrade.html.j2"
FORMGRADE_TEMPLATE = """\
{%- extends "index.html.j2" -%}
{%- block body -%}
{{ super() }}
<script>
$(document).ajaxError(function (event, xhr, options) {
  var asked_to_log_in = /\\/login/.test(xhr.responseURL || "");
  var answer = asked_to_log_in ? "the server asked to log in again"
    : xhr.status ? "the server answered " + xhr.status + " " + (xhr.statusText || "")
    : "the server did not answer";
  var what = options.type === "GET" ? "This page could not load its grades and comments"
    : "What was just typed here is NOT in the gradebook";
  var note = document.getElementById("NOTE_ID");
  if (!note) {
    note = document.createElement("div");
    note.id = "NOTE_ID";
    note.className = "alert alert-danger";
    note.setAttribute("role", "alert");
    note.style.cssText = "position: fixed; top: 60px; left: 5%; right: 5%; z-index: 2000;";
    document.body.appendChild(note);
  }
  note.textContent = what + " (" + options.type + " " + options.url.split("?")[0] + ": " +
    answer + "). Nothing typed on this page is saved now: open the formgrader again from " +
    "JupyterLab (Nbgrader > Formgrader) or from a link with the token, and type it there.";
  $("input.score, input.extra-credit, textarea.comment, .scoring-buttons button")
    .prop("disabled", true);
});
</script>
{%- endblock body -%}
""".replace("NOTE_ID", NOT_SAVED_ID)


def keep_login_for_the_whole_server(identity_provider, base_url):
    """Give every login cookie the server's base URL as its path (unless one is configured)."""
    if not hasattr(identity_provider, "cookie_options"):  # a provider that sets no login cookie
        return
    options = dict(identity_provider.cookie_options)
    options.setdefault("path", base_url)
    identity_provider.cookie_options = options


class NotFound(Template404):
    """The formgrader's answer to an address it does not have: 404, once the user is known."""

    async def prepare(self):
        """Log the user in (or send them to log in), then answer 404."""
        await JupyterHandler.prepare(self)
        if not self._finished:  # not sent to the log-in page
            raise web.HTTPError(404, f"the formgrader has no page {self.request.path}")


def replace_handler(router, old, new):
    """Serve, in place, every rule of `router` (and of the routers it holds) of `old` by `new`."""
    for rule in getattr(router, "rules", []):
        if rule.target is old:
            rule.target = new
        else:
            replace_handler(rule.target, old, new)


def install(web_app):
    """Change the formgrader's grading page and its 404; False if the server has no formgrader."""
    exporter = web_app.settings.get("nbgrader_exporter")
    if exporter is None:
        return False
    if exporter.template_file != FORMGRADE:
        exporter.extra_loaders = [DictLoader({FORMGRADE: FORMGRADE_TEMPLATE}),
                                  *exporter.extra_loaders]
        exporter.template_file = FORMGRADE
    replace_handler(web_app.default_router, Template404, NotFound)
    return True


def _jupyter_server_extension_points():
    """This module is a Jupyter server extension."""
    return [{"module": "course.coursedir.formgrader_pages"}]


def _load_jupyter_server_extension(server):
    """Keep logins for the whole server now; once the formgrader is loaded, change its page."""
    keep_login_for_the_whole_server(server.identity_provider, server.base_url)

    def install_or_say():
        if not install(server.web_app):
            server.log.info("No formgrader in this server: its grading page is left as it is")

    IOLoop.current().add_callback(install_or_say)
