"""A class on a real JupyterHub for test_hub.py: Unix users, the hub, and their servers.

Everything lives in one folder of the temporary directory (/tmp/attn-hub-*): the users' homes,
the exchange and the hub's database. Users and groups start with `attn-`; `remove_leftovers`
takes away whatever a run that was killed left behind (its users, their processes, its hub).
"""

import grp
import importlib
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import requests
from local_servers import free_port

from course.coursedir import paths

DEPLOY = paths.ROOT / "deploy"  # installed for each class by install_deploy, as /opt/course/deploy
PREFIX = "attn-hub-"
INSTRUCTOR = "attn-teacher"
STUDENTS = ("attn-ada", "attn-alan")
PLANTER = "attn-eve"  # a student who plants links and a FIFO in inbound/, and submits nothing else
GROUP = "attn-students"
SERVICE = "course-test"
COURSE_FILES = ["nbgrader_config.py", "source", "release", "course", "utils"]
PYTHON = Path(sys.executable)


def exists(user):
    """True when the Unix user exists."""
    try:
        pwd.getpwnam(user)
        return True
    except KeyError:
        return False


def kill_processes_of(user):
    """Kill every process that the Unix user `user` runs, by its id."""
    for process in psutil.process_iter(["username"]):
        if process.info["username"] == user:
            try:
                process.kill()
            except psutil.Error:
                pass


def remove_user(user):
    """Remove a Unix user of the class, their processes and their home."""
    if exists(user):
        kill_processes_of(user)
        subprocess.run(["userdel", "--force", "--remove", user], capture_output=True)


def stop_processes_of(folder):
    """Kill, by id, the processes of a run in `folder`: its hub, its proxy, its grading."""
    pid_files = [folder / "hub" / "jupyterhub.pid", folder / "hub" / "proxy.pid"]
    pids = {int(f.read_text() or 0) for f in pid_files if f.exists()}
    for process in psutil.process_iter(["pid", "cmdline"]):
        in_folder = any(str(folder) in part for part in process.info["cmdline"] or [])
        if process.info["pid"] in pids or in_folder:
            try:
                process.kill()
            except psutil.Error:
                pass


def remove_leftovers():
    """Remove the users, group, hubs and folders of earlier runs of this test."""
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        stop_processes_of(folder)
    for user in (INSTRUCTOR, *STUDENTS, PLANTER):
        remove_user(user)
    try:
        grp.getgrnam(GROUP)
        subprocess.run(["groupdel", GROUP], check=True, capture_output=True)
    except KeyError:
        pass
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        shutil.rmtree(folder, ignore_errors=True)


def add_users(homes):
    """Create the instructor and the students with homes in `homes`; return their passwords."""
    subprocess.run(["groupadd", GROUP], check=True)
    passwords = {}
    for user in (INSTRUCTOR, *STUDENTS, PLANTER):
        groups = ["-G", GROUP] if user != INSTRUCTOR else []
        command = ["useradd", "-m", "-d", str(homes / user), "-s", "/bin/bash", *groups, user]
        subprocess.run(command, check=True, capture_output=True)
        passwords[user] = secrets.token_urlsafe(12)
    lines = "".join(f"{user}:{password}\n" for user, password in passwords.items())
    subprocess.run(["chpasswd"], input=lines, text=True, check=True)
    return passwords


def runnable_by_others(python):
    """True when a user other than root can run `python` and import the course's packages."""
    command = ["runuser", "-u", "nobody", "--", str(python), "-c", "import utils, nbgrader"]
    return subprocess.run(command, capture_output=True).returncode == 0


def class_python(folder):
    """A Python with the course's packages that every user can run: .venv's, or copies in `folder`.

    Copies of .venv and of its interpreter (hard links where possible) serve when users cannot
    run .venv's interpreter, as when it was installed under /root.
    """
    if runnable_by_others(PYTHON):
        return PYTHON
    folder.mkdir(mode=0o755)
    interpreter = copy_tree(Path(sys.base_prefix), folder / "interpreter")
    binary = interpreter / "bin" / f"python3.{sys.version_info.minor}"
    relative_runpath(binary.resolve(), Path(sys.base_prefix) / "lib")
    venv = copy_tree(Path(sys.prefix), folder / "venv")
    for link in venv.glob("bin/python*"):
        link.unlink()
        link.symlink_to(binary)
    install_utils(venv)
    (venv / "pyvenv.cfg").unlink()
    version = sys.version.split()[0]
    (venv / "pyvenv.cfg").write_text(f"home = {binary.parent}\nversion = {version}\n")
    for script in venv.glob("bin/*"):
        rewrite_shebang(script, Path(sys.prefix) / "bin" / "python", venv / "bin" / "python")
    assert runnable_by_others(venv / "bin" / "python"), f"users cannot run {PYTHON} nor a copy"
    return venv / "bin" / "python"


def install_utils(venv):
    """Put copies of utils/ and course/ in the venv's site-packages, for a clone that users
    cannot read (the grader's zygote imports the installed `course`)."""
    site = next(venv.glob("lib/python3*/site-packages"))
    for editable in site.glob("__editable__*"):
        editable.unlink()  # it points into the clone
    ignore = shutil.ignore_patterns("__pycache__")
    for package in ("utils", "course"):
        shutil.copytree(paths.ROOT / package, site / package, ignore=ignore)


def copy_tree(source, target):
    """A copy of `source` at `target`: hard links on the same file system, else a full copy."""
    if subprocess.run(["cp", "-al", source, target], capture_output=True).returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run(["cp", "-a", source, target], check=True)
    return target


def relative_runpath(binary, library):
    """Make an executable look for its libraries in ../lib beside it rather than in `library`."""
    old = str(library).encode()
    new = b"$ORIGIN/../lib"
    data = binary.read_bytes()
    if old + b"\0" in data and len(new) <= len(old):
        binary.unlink()  # a file of its own, not a hard link to the original
        binary.write_bytes(data.replace(old + b"\0", new.ljust(len(old) + 1, b"\0")))
        binary.chmod(0o755)


def rewrite_shebang(script, old, new):
    """Point a script's `#!old` line at `new`, in a file of its own (not a hard link)."""
    if script.is_symlink() or not script.is_file():
        return
    text = script.read_bytes()
    if text.startswith(f"#!{old}".encode()):
        script.unlink()
        script.write_bytes(f"#!{new}".encode() + text[len(f"#!{old}") :])
        script.chmod(0o755)


def settings(exchange, python):
    """The class's settings, as the hub's environment gives them."""
    return {
        "COURSE_INSTRUCTOR": INSTRUCTOR,
        "COURSE_STUDENTS_GROUP": GROUP,
        "COURSE_EXCHANGE": str(exchange),
        "COURSE_PYTHON": str(python),
    }


def install_deploy(target):
    """A copy of deploy/ at `target` that every user can read, as the README's install makes."""
    shutil.copytree(DEPLOY, target, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["chmod", "-R", "a+rX", str(target)], check=True)
    return target


def class_settings(environment, deploy):
    """The installed deploy/class_settings.py, loaded with the class's settings."""
    saved = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    try:
        if str(deploy) not in sys.path:
            sys.path.insert(0, str(deploy))
        return importlib.reload(importlib.import_module("class_settings"))
    finally:
        for name, value in saved.items():
            os.environ.pop(name) if value is None else os.environ.update({name: value})


def copy_course(home, owner):
    """The instructor's copy of the course, in their home; returns its folder."""
    folder = home / "attention-step-by-step"
    folder.mkdir()
    for name in COURSE_FILES:
        source = paths.ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, folder / name)
    subprocess.run(["chown", "-R", f"{owner}:", str(folder)], check=True)
    return folder


def run_as(user, command, environment, cwd=None, timeout=600, start_in=None):
    """Run `command` as the Unix user `user`, with only `environment` (plus HOME and USER).

    `start_in`: a control group (cgroups.Group) to start it in, or None.
    """
    home = pwd.getpwnam(user).pw_dir
    variables = {"HOME": home, "USER": user, "LOGNAME": user, "LANG": "C.UTF-8", **environment}
    prefix = ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in variables.items())]
    return subprocess.run(
        [*prefix, *map(str, command)],
        cwd=cwd or home,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=start_in.join if start_in else None,
    )


def overlay_config(folder, ports, token, deploy, config="jupyterhub_config.py"):
    """The test's own hub configuration: deploy/'s `config`, on loopback ports, with an admin
    service."""
    text = f'''
c = get_config()  # noqa: F821
load_subconfig({str(deploy / config)!r})  # noqa: F821
c.JupyterHub.bind_url = "http://127.0.0.1:{ports[0]}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{ports[1]}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{ports[2]}"
c.ConfigurableHTTPProxy.pid_file = {str(folder / "proxy.pid")!r}
c.JupyterHub.db_url = "sqlite:///{folder / "jupyterhub.sqlite"}"
c.JupyterHub.cookie_secret_file = {str(folder / "cookie_secret")!r}
c.JupyterHub.pid_file = {str(folder / "jupyterhub.pid")!r}
c.JupyterHub.services = [{{"name": {SERVICE!r}, "api_token": {token!r}}}]
c.JupyterHub.load_roles = [*c.JupyterHub.load_roles, {{
    "name": {SERVICE!r}, "services": [{SERVICE!r}],
    "scopes": ["admin:users", "admin:servers", "admin:auth_state", "tokens", "read:groups",
               "access:servers"],
}}]
'''
    path = folder / "jupyterhub_config.py"
    path.write_text(text)
    return path


class Hub:
    """A JupyterHub started from deploy/jupyterhub_config.py in `folder`, until `stop`."""

    def __init__(self, folder, environment, deploy, config="jupyterhub_config.py"):
        folder.mkdir()
        self.folder, self.token = folder, secrets.token_hex(32)
        ports = [free_port() for _ in range(3)]
        self.url = f"http://127.0.0.1:{ports[0]}"
        config = overlay_config(folder, ports, self.token, deploy, config)
        self.log = open(folder / "jupyterhub.log", "w")  # noqa: SIM115 - closed by stop()
        path = os.pathsep.join([str(PYTHON.parent), os.environ["PATH"]])
        self.process = subprocess.Popen(
            [PYTHON.parent / "jupyterhub", "-f", config],
            cwd=folder,
            env={**os.environ, **environment, "PATH": path},
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            self.wait_until_up()
        except BaseException:
            self.stop()
            raise

    def wait_until_up(self, seconds=60):
        """Wait until the hub answers through its proxy."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if requests.get(f"{self.url}/hub/api/", timeout=2).ok:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"JupyterHub did not start:\n{self.log_tail()}")

    def log_tail(self, characters=4000):
        """The end of the hub's log."""
        self.log.flush()
        return (self.folder / "jupyterhub.log").read_text()[-characters:]

    def api(self, method, path, token=None, **kwargs):
        """A request to the hub's REST API (as the test's admin service by default)."""
        headers = {"Authorization": f"token {token or self.token}"}
        response = requests.request(method, f"{self.url}/hub/api{path}", headers=headers, **kwargs)
        response.raise_for_status()
        return response.json() if response.content else None

    def user_token(self, user):
        """A new API token of `user` that opens the user's own server."""
        body = {"note": "course test", "scopes": [f"access:servers!user={user}"]}
        return self.api("POST", f"/users/{user}/tokens", json=body)["token"]

    def start_server(self, user, seconds=180):
        """Start `user`'s server and wait until it is ready."""
        try:
            self.api("POST", f"/users/{user}/server")
        except requests.HTTPError as error:
            raise RuntimeError(f"{user}'s server did not start:\n{self.log_tail()}") from error
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            server = self.api("GET", f"/users/{user}")["servers"].get("", {})
            if server.get("ready"):
                return
            time.sleep(0.5)
        raise RuntimeError(f"{user}'s server did not start:\n{self.log_tail()}")

    def stop(self):
        """Stop the hub, which stops the servers and the proxy it started."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        stop_processes_of(self.folder.parent)  # the proxy, if the hub could not stop it
        self.log.close()


class Server:
    """A user's own server, reached through the hub's proxy with the user's token."""

    def __init__(self, hub, user, token):
        self.url, self.user, self.token = f"{hub.url}/user/{user}", user, token

    def request(self, method, path, **kwargs):
        """A request to the server; returns the response, whatever its status."""
        headers = {"Authorization": f"token {self.token}"}
        kwargs.setdefault("allow_redirects", False)
        return requests.request(method, f"{self.url}{path}", headers=headers, **kwargs)

    def call(self, method, path, **kwargs):
        """A request that must succeed; returns the decoded JSON."""
        response = self.request(method, path, **kwargs)
        assert response.ok, f"{method} {path}: {response.status_code} {response.text[:2000]}"
        return response.json()

    def assignment_action(self, action, course, assignment):
        """nbgrader's Assignments tab: fetch, submit or fetch_feedback."""
        form = {"course_id": course, "assignment_id": assignment}
        return self.call("POST", f"/assignments/{action}", data=form)

    def read(self, path):
        """A file's content from the server's Contents API (notebooks as dicts)."""
        return self.call("GET", f"/api/contents/{path}", params={"content": 1})["content"]

    def write_notebook(self, path, nb):
        """Save a notebook through the Contents API."""
        self.call("PUT", f"/api/contents/{path}", json={"type": "notebook", "content": nb})
