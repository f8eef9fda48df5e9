"""A class on a real JupyterHub (deploy/), end to end, with real Unix users.

JupyterHub and configurable-http-proxy run on loopback with deploy/jupyterhub_config.py; an
instructor and three students are Unix users who log in through PAM. Through the hub's REST API
and each user's own server: the instructor releases lab 01 (formgrader), the students fetch it,
fill it in (one correct, after a blank first submission; one with a catalogued mistake) and
submit (Assignments), and one of them also puts a submission into the exchange in the other's
name, while a third student's submission is only links to the instructor's source notebook and
gradebook, and a FIFO; the instructor collects (formgrader), autogrades in the sandbox (as
the instructor, or as root with deploy/grade_as_root.py where the instructor cannot make it) and
writes feedback (`python -m course.instructor`), releases it (`nbgrader release_feedback`);
each student fetches their own feedback. Then what a student must not reach, tried on the real
paths as that student, and the formgrader, over HTTP and in a browser
(tests/browser/formgrader_check.py). `make test-hub` runs it (as root: it adds Unix users);
`pytest -s` prints a summary of each step and check.
"""

import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import hub_course as hc
import nbformat
import psutil
import pytest
import requests
from catalogue import mistakes
from control_groups import undelegate

from course.coursedir import notebooks, paths
from course.coursedir.scratch import fill, solution_cells
from course.grading.kernels import cgroups

pytestmark = [
    pytest.mark.hub,
    pytest.mark.skipif(
        os.environ.get("COURSE_HUB_TEST") != "1",
        reason="make test-hub runs it: it needs root, configurable-http-proxy and setfacl",
    ),
]
LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)
COURSE_ID = "attention-step-by-step"
ADA, ALAN = hc.STUDENTS  # Ada hands in a blank lab, then the solution; Alan a mistake
EVE = hc.PLANTER  # Eve hands in links to the instructor's files, and a FIFO
PLANTED = [(NOTEBOOK, "a symbolic link"), ("gradebook.db", "a symbolic link"),
           ("answers.ipynb", "a FIFO")]  # fmt: skip
MISTAKE = next(m for m in mistakes(LAB) if m.name == "softmax_ignores_dim")
AUTOGRADED, TOTAL = 8.0, 10.0  # lab 01's points: autograded, and with the written answers
# Eve also back-dates her submission and names a FIFO with terminal escapes (a window title, a
# cleared screen); Alan's code tries to keep extended attributes and to enlarge a socket's buffers.
BACK_DATED = "2000-01-01 00:00:00.000000 UTC"
ESCAPING_NAME = "\x1b]0;owned\x07\x1b[2Jnotes.ipynb"
HOLDS_KERNEL_MEMORY = """
import errno, os, socket
try:
    open("/tmp/hoard", "w").close()
    os.setxattr("/tmp/hoard", "user.hoard", b"x" * 4000)
    print("extended attribute kept")
except OSError as error:
    print("extended attribute refused:", errno.errorcode[error.errno])
try:
    socket.socketpair()[0].setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
    print("socket buffer enlarged")
except OSError as error:
    print("socket buffer refused:", errno.errorcode[error.errno])
"""
PROBE = Path(__file__).with_name("hub_probe.py")
FORMGRADER = "/formgrader/manage_assignments"
FORMGRADER_API = "/formgrader/api/assignments"


def say(step, detail=""):
    """One line of the summary that `pytest -s` shows."""
    print(f"  {step:<52} {detail}".rstrip(), flush=True)


def check_prerequisites():
    """Fail, saying what is missing, unless this machine can run the class."""
    missing = [tool for tool in ("configurable-http-proxy", "setfacl", "runuser", "useradd")
               if shutil.which(tool) is None]  # fmt: skip
    assert os.geteuid() == 0, "the hub test adds Unix users: run it as root (make test-hub)"
    assert not missing, f"missing: {missing} (.ci/run installs them)"


class Class:
    """The hub, its users, the instructor's course folder and the exchange."""

    def __init__(self, base):
        self.base, self.homes = base, base / "home"
        self.homes.mkdir(mode=0o755)
        self.passwords = hc.add_users(self.homes)
        self.exchange = base / "exchange"
        self.python = hc.class_python(base / "python")
        self.deploy = hc.install_deploy(base / "deploy")
        self.probe_script = Path(shutil.copy(PROBE, base / PROBE.name))  # readable by all
        self.environment = hc.settings(self.exchange, self.python)
        self.settings = hc.class_settings(self.environment, self.deploy)
        self.course = hc.copy_course(self.homes / hc.INSTRUCTOR, hc.INSTRUCTOR)
        setup = [hc.PYTHON, self.deploy / "setup_class.py"]
        subprocess.run(setup, env={**os.environ, **self.environment}, check=True)
        self.hub = None

    def start(self):
        """Start the hub; log every user in and give each a token."""
        self.hub = hc.Hub(self.base / "hub", self.environment, self.deploy)
        self.sessions = {u: log_in(self.hub, u, p) for u, p in self.passwords.items()}
        self.tokens = {user: self.hub.user_token(user) for user in self.passwords}
        self.servers = {u: hc.Server(self.hub, u, t) for u, t in self.tokens.items()}

    def as_user(self, user, command, cwd=None, start_in=None):
        """Run `command` as `user`, in the environment their server has, in group `start_in`."""
        environment = self.settings.user_environment(user)
        return hc.run_as(user, command, environment, cwd=cwd, start_in=start_in)

    def instructor(self, *command):
        """Run a command as the instructor in the course folder; it must succeed."""
        result = self.as_user(hc.INSTRUCTOR, command, cwd=self.course)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
        return result

    def probe(self, user, *operations):
        """What `user` gets for each operation of tests/deploy/hub_probe.py."""
        command = [self.python, self.probe_script, json.dumps(operations)]
        result = self.as_user(user, command, cwd="/")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def inbound(self, student):
        """The real paths of a student's submissions in the exchange, oldest first."""
        folder = self.exchange / COURSE_ID / "inbound"
        uid = pwd.getpwnam(student).pw_uid
        found = [p for p in folder.glob(f"{student}+{LAB}+*") if p.stat().st_uid == uid]
        return sorted(found, key=lambda p: p.name.split("+")[2])

    def feedback_file(self, student):
        """The real path of the feedback file that `student` may read in the exchange."""
        for path in (self.exchange / COURSE_ID / "feedback").glob("*.html"):
            acl = subprocess.run(["getfacl", "-p", path], capture_output=True, text=True).stdout
            if f"user:{student}:r" in acl:
                return path
        raise AssertionError(f"no feedback in the exchange for {student}")

    def close(self):
        """Stop the hub."""
        if self.hub is not None:
            self.hub.stop()


def running_class(make_class):
    """Yield make_class(base) started; remove every user, process and file at the end."""
    check_prerequisites()
    hc.remove_leftovers()
    base = Path(tempfile.mkdtemp(prefix=hc.PREFIX))
    base.chmod(0o755)
    the_class = None
    try:
        the_class = make_class(base)
        the_class.start()
        yield the_class
    finally:
        if the_class is not None:
            the_class.close()
        hc.remove_leftovers()
        undelegate(hc.INSTRUCTOR)  # the group the hub made for the instructor's grading


@pytest.fixture(scope="module")
def hub_class():
    """A running hub with its class, removed with every user, process and file at the end."""
    yield from running_class(Class)


def log_in(hub, user, password):
    """A browser-like session logged in through the hub's login page (PAM)."""
    session = requests.Session()
    session.get(f"{hub.url}/hub/login")
    form = {"username": user, "password": password, "_xsrf": session.cookies.get("_xsrf")}
    response = session.post(f"{hub.url}/hub/login", data=form, allow_redirects=False)
    assert response.status_code == 302, f"{user} could not log in: {response.status_code}"
    return session


def release(the_class):
    """The instructor records lab 01 in the gradebook and releases it from the formgrader."""
    the_class.instructor(the_class.python, "-m", "nbgrader", "generate_assignment", LAB, "--force")
    teacher = the_class.servers[hc.INSTRUCTOR]
    answer = teacher.call("POST", f"/formgrader/api/assignment/{LAB}/release")
    assert answer["success"], answer
    say("instructor releases 01_softmax (formgrader)", "ok")


def hand_in(the_class, student, answers):
    """A student fetches the lab if needed, fills it in with `answers` and submits it."""
    server = the_class.servers[student]
    if server.request("GET", f"/api/contents/{LAB}").status_code == 404:
        server.assignment_action("fetch", COURSE_ID, LAB)
    path = f"{LAB}/{NOTEBOOK}"
    nb = fill(nbformat.from_dict(server.read(path)), answers)
    server.write_notebook(path, nb)
    listing = server.assignment_action("submit", COURSE_ID, LAB)
    assert listing.get("success", True), listing


def forge_for(the_class, forger, victim):
    """`forger` puts a blank lab, newer than anything, into the exchange under `victim`'s name."""
    later = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    folder = the_class.exchange / COURSE_ID / "inbound" / f"{victim}+{LAB}+{later}+forged"
    blank = (paths.ROOT / "release" / LAB / NOTEBOOK).read_text()
    return the_class.probe(forger, ["forge", str(folder / NOTEBOOK), blank])[0]


def plant(the_class):
    """Eve's submission, back-dated: links to the instructor's source notebook and gradebook,
    and FIFOs, one named with terminal escapes."""
    folder = the_class.exchange / COURSE_ID / "inbound" / f"{EVE}+{LAB}+{BACK_DATED}+planted"
    targets = {NOTEBOOK: the_class.course / "source" / LAB / NOTEBOOK,
               "gradebook.db": the_class.course / "gradebook.db"}  # fmt: skip
    operations = [["forge", str(folder / "timestamp.txt"), BACK_DATED],
                  *(["link", str(folder / name), str(target)] for name, target in targets.items()),
                  ["fifo", str(folder / "answers.ipynb")],
                  ["fifo", str(folder / ESCAPING_NAME)]]  # fmt: skip
    results = the_class.probe(EVE, *operations)
    say(f"{EVE} plants links to source/, the gradebook; a FIFO", ", ".join(results))
    assert results == ["ok"] * len(operations)


def submit_work(the_class):
    """Ada submits a blank lab, then the solution; Alan a catalogued mistake and forges; Eve
    plants links."""
    answers = solution_cells(LAB)
    hand_in(the_class, ADA, {})
    hand_in(the_class, ADA, answers)
    hand_in(the_class, ALAN, {**answers, MISTAKE.cell: MISTAKE.code + HOLDS_KERNEL_MEMORY})
    say(f"{ADA} fetches, submits blank, then solution", f"{len(the_class.inbound(ADA))} in inbound")
    say(f"{ALAN} fetches, submits {MISTAKE.name}", f"{len(the_class.inbound(ALAN))} in inbound")
    forged = forge_for(the_class, ALAN, ADA)
    say(f"{ALAN} forges a newer submission as {ADA}", f"the exchange takes it: {forged}")
    plant(the_class)


def grade(the_class):
    """Collect (formgrader), autograde and write feedback (course tools), release it (nbgrader)."""
    teacher = the_class.servers[hc.INSTRUCTOR]
    answer = teacher.call("POST", f"/formgrader/api/assignment/{LAB}/collect")
    assert answer["success"], answer
    collected = sorted(p.parent.name for p in (the_class.course / "submitted").glob(f"*/{LAB}"))
    say("instructor collects (formgrader)", ", ".join(collected))
    refused = [line.split("Not collected: ")[1] for line in answer["log"].splitlines()
               if "Not collected: " in line]  # fmt: skip
    say("", f"| not collected: {'; '.join(refused)}")
    for line in answer["log"].splitlines():
        if "refused " in line:
            say("", "| " + line[line.index("refused ") :])
    graded = autograde(the_class)
    for line in graded.stdout.strip().splitlines():
        say("", f"| {line}")
    the_class.instructor(
        the_class.python, "-m", "course.instructor", "feedback", LAB, "--provisional"
    )
    the_class.instructor(the_class.python, "-m", "nbgrader", "release_feedback", LAB)
    say("instructor writes and releases feedback", "ok")
    return answer["log"], graded.stdout


def autograde(the_class):
    """The instructor autogrades in the sandbox, or root does (deploy/grade_as_root.py)."""
    probe = "from course.grading.kernels import probe; print(probe.probe()[1])"
    reason = the_class.instructor(the_class.python, "-c", probe).stdout.strip()
    if not reason:
        say("instructor autogrades (python -m course.instructor)", "sandboxed")
        command = [the_class.python, "-m", "course.instructor", "autograde", LAB]
        # As from a terminal of the instructor's server: in the group the hub started it in.
        group = cgroups.delegate(hc.INSTRUCTOR)
        result = the_class.as_user(hc.INSTRUCTOR, command, cwd=the_class.course, start_in=group)
        assert graded_but_eve(result), result.stdout[-3000:] + result.stderr[-5000:]
        return result
    say(f"no sandbox as {hc.INSTRUCTOR}", reason)
    command = [the_class.python, the_class.deploy / "grade_as_root.py", LAB]
    environment = {**os.environ, **the_class.environment}
    result = subprocess.run(command, env=environment, capture_output=True, text=True)
    assert graded_but_eve(result), result.stdout[-3000:] + result.stderr[-5000:]
    say("root autogrades (deploy/grade_as_root.py)", "sandboxed, files given back")
    return result


def graded_but_eve(result):
    """True when autograde graded everyone but Eve, whose lab has no notebook left to grade."""
    not_graded = [line for line in result.stdout.splitlines() if ": not graded, " in line]
    everyone = result.returncode == 0 and not not_graded
    return everyone or (result.returncode == 1 and [EVE in line for line in not_graded] == [True])


def fetch_feedback(the_class, student):
    """A student fetches their feedback; returns its HTML."""
    server = the_class.servers[student]
    server.assignment_action("fetch_feedback", COURSE_ID, LAB)
    folder = server.call("GET", f"/api/contents/{LAB}/feedback")["content"]
    assert len(folder) == 1, folder
    return server.read(f"{folder[0]['path']}/{Path(NOTEBOOK).stem}.html")


@pytest.fixture(scope="module")
def flow(hub_class):
    """The whole cycle of lab 01; returns what each step gave."""
    print(f"\nJupyterHub at {hub_class.hub.url}: {hc.INSTRUCTOR} teaches {ADA} and {ALAN}")
    say("each user logs in on the hub's page (PAM)", "ok")
    users = [hc.INSTRUCTOR, *hc.STUDENTS]  # Eve needs no server: she works in a terminal
    for user in users:
        hub_class.hub.start_server(user)
    say("each user's server starts (as that user)", ", ".join(users))
    release(hub_class)
    planted_at = datetime.now(UTC).replace(tzinfo=None)
    submit_work(hub_class)
    collect_log, summary = grade(hub_class)
    feedback = {student: fetch_feedback(hub_class, student) for student in hc.STUDENTS}
    return {"collect_log": collect_log, "summary": summary, "feedback": feedback,
            "planted_at": planted_at}  # fmt: skip


def score(html):
    """The (score, maximum) that a feedback page gives."""
    found = re.search(r"Score:\s*(?:to be graded,\s*)?([\d.]+)\s*/\s*([\d.]+)", html)
    assert found, html[:2000]
    return float(found.group(1)), float(found.group(2))


def test_each_student_gets_their_own_feedback(flow):
    ada, alan = flow["feedback"][ADA], flow["feedback"][ALAN]
    say(f"{ADA} fetches feedback", "score {} / {}".format(*score(ada)))
    say(f"{ALAN} fetches feedback", "score {} / {}, names the mistake".format(*score(alan)))
    assert "2 students graded" in flow["summary"], flow["summary"]
    assert score(ada) == (AUTOGRADED, TOTAL)  # the solution, not the blank first submission
    assert 0 < score(alan)[0] < AUTOGRADED and MISTAKE.message in alan
    assert MISTAKE.message not in ada


def test_the_instructors_grading_limits_each_sandbox_as_a_whole(flow):
    limits = [line for line in flow["summary"].splitlines() if "sandbox limits:" in line]
    assert limits and "one cgroup" in limits[0], flow["summary"]  # not rlimits, per process
    delegated = f"/{cgroups.DELEGATED}/{hc.INSTRUCTOR}"
    inside = [line for line in server_groups(hc.INSTRUCTOR) if delegated in line]
    say(f"{hc.INSTRUCTOR}'s server runs in", ", ".join(inside) or "no delegated group")
    assert inside


def server_groups(user):
    """The lines of /proc/PID/cgroup of `user`'s Jupyter server: its control groups."""
    for process in psutil.process_iter(["username", "cmdline"]):
        command = " ".join(process.info["cmdline"] or [])
        if process.info["username"] == user and "jupyterhub-singleuser" in command:
            return Path(f"/proc/{process.pid}/cgroup").read_text().splitlines()
    return []


def test_a_submission_made_in_another_students_name_is_not_collected(flow):
    assert f"{ADA}+{LAB}+" in flow["collect_log"] and f"made by {ALAN}" in flow["collect_log"]


def test_links_and_a_fifo_planted_in_inbound_are_refused_and_named(flow, hub_class):
    submitted = hub_class.course / "submitted"
    for name, what in PLANTED:
        assert f"refused {name} from student {EVE}: {what}" in flow["collect_log"], name
    texts = [p.read_bytes() for p in submitted.rglob("*") if p.is_file() and not p.is_symlink()]
    leaked = [t for t in texts if b"BEGIN SOLUTION" in t or b"BEGIN HIDDEN TESTS" in t]
    planted = sorted(p.name for p in (submitted / EVE / LAB).iterdir())
    say(f"{EVE}: her folder of submitted/ holds", ", ".join(planted))
    say("solution text anywhere in submitted/", f"{len(leaked)} files")
    assert planted == ["timestamp.txt"] and not leaked
    assert all((submitted / student / LAB / NOTEBOOK).is_file() for student in hc.STUDENTS)


def test_a_back_dated_submission_is_collected_at_its_real_arrival(flow, hub_class):
    stamp = (hub_class.course / "submitted" / EVE / LAB / "timestamp.txt").read_text().strip()
    say(f"{EVE} claims {BACK_DATED[:10]}: collected as of", stamp)
    collected = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f UTC")
    assert collected >= flow["planted_at"] - timedelta(minutes=1), stamp
    shown = "the submission says 2000-01-01 00:00:00 UTC, its files arrived at"
    assert shown in flow["collect_log"], flow["collect_log"]


def test_terminal_escapes_in_a_file_name_are_printed_escaped(flow):
    printed = flow["collect_log"] + flow["summary"]
    assert "\x1b" not in printed and "\x07" not in printed
    shown = "\\x1b]0;owned\\x07\\x1b[2Jnotes.ipynb"
    say("a FIFO named with terminal escapes", "refused, named escaped" if shown in printed else "")
    assert f"refused {shown} from student {EVE}: a FIFO" in flow["collect_log"]


def test_a_hub_sandbox_keeps_no_extended_attribute_nor_larger_socket_buffers(flow, hub_class):
    nb = notebooks.read(hub_class.course / "autograded" / ALAN / LAB / NOTEBOOK)
    printed = notebooks.output_text(nb)
    found = [line for line in printed.splitlines() if line.startswith(("extended", "socket"))]
    say(f"{ALAN}'s kernel, graded in the hub's sandbox", "; ".join(found))
    assert found == ["extended attribute refused: ENOTSUP", "socket buffer refused: EPERM"]


def denied(results):
    """True when no operation succeeded."""
    return all(result != "ok" for result in results)


def others_work(the_class, victim):
    """(what, operations) a student tries on `victim`'s submission, feedback and home."""
    submission = the_class.inbound(victim)[-1]
    feedback = the_class.feedback_file(victim)
    cache = next(Path(pwd_home(victim), ".local/share/jupyter/nbgrader_cache").rglob(NOTEBOOK))
    return [
        ("list inbound/", [["list", str(submission.parent)]]),
        (f"list, read {victim}'s submission (real path)",
         [["list", str(submission)], ["read", str(submission / NOTEBOOK)]]),
        (f"overwrite, add to, remove {victim}'s submission",
         [["write", str(submission / NOTEBOOK)], ["create", str(submission / "x.ipynb")],
          ["remove", str(submission / NOTEBOOK)]]),
        (f"rename {victim}'s submission folder", [["rename", str(submission), f"{submission}x"]]),
        ("list feedback/", [["list", str(feedback.parent)]]),
        (f"read, overwrite {victim}'s feedback (real path)",
         [["read", str(feedback)], ["write", str(feedback)]]),
        (f"read {victim}'s home and nbgrader cache",
         [["list", pwd_home(victim)], ["read", str(cache)]]),
    ]  # fmt: skip


def pwd_home(user):
    """A user's home folder."""
    return pwd.getpwnam(user).pw_dir


@pytest.mark.parametrize(("student", "victim"), [(ALAN, ADA), (ADA, ALAN)])
def test_no_student_reaches_another_students_work(flow, hub_class, student, victim):
    for what, operations in others_work(hub_class, victim):
        results = hub_class.probe(student, *operations)
        say(f"{student}: {what}", "denied: " + ", ".join(results))
        assert denied(results), (what, results)
    outbound = hub_class.exchange / COURSE_ID / "outbound" / LAB
    own = [["read", str(hub_class.feedback_file(student))], ["list", str(outbound)]]
    results = hub_class.probe(student, *own)
    say(f"{student}: own feedback, released lab (controls)", ", ".join(results))
    assert results == ["ok", "ok"]


def test_no_student_reaches_the_course_folder(flow, hub_class):
    course = hub_class.course
    operations = [
        ["list", str(course)],
        ["read", str(course / "gradebook.db")],
        ["write", str(course / "gradebook.db")],
        ["read", str(course / "submitted" / ADA / LAB / NOTEBOOK)],
        ["read", str(course / "source" / LAB / NOTEBOOK)],
    ]
    results = hub_class.probe(ALAN, *operations)
    say(f"{ALAN}: course folder, gradebook, submitted/, source/", "denied: " + ", ".join(results))
    assert denied(results)


def page_config(html):
    """The page configuration that JupyterLab's HTML page carries."""
    found = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                      html, re.DOTALL)  # fmt: skip
    assert found, html[:2000]
    return json.loads(found.group(1))


def test_a_student_cannot_open_the_formgrader(flow, hub_class):
    teacher, ada = hub_class.servers[hc.INSTRUCTOR], hub_class.servers[ADA]
    as_ada = hc.Server(hub_class.hub, hc.INSTRUCTOR, hub_class.tokens[ADA])
    by_token = as_ada.request("GET", FORMGRADER).status_code
    by_cookie = hub_class.sessions[ADA].get(f"{teacher.url}{FORMGRADER}")
    own = [ada.request("GET", path).status_code for path in (FORMGRADER, FORMGRADER_API)]
    disabled = page_config(ada.request("GET", "/lab").text)["disabledExtensions"]
    say(f"{ADA}: instructor's formgrader with her token", str(by_token))
    say(f"{ADA}: instructor's formgrader logged in (cookie)",
        f"{by_cookie.status_code} after {len(by_cookie.history)} redirects")  # fmt: skip
    say(f"{ADA}: her own server's formgrader (page, API)", ", ".join(map(str, own)))
    say(f"{ADA}: JupyterLab's nbgrader panels disabled", ", ".join(sorted(disabled)))
    assert by_token == 403 and by_cookie.status_code == 403
    assert own == [404, 404] and "@jupyter/nbgrader:formgrader" in disabled


def test_the_instructors_formgrader_may_be_framed_by_its_own_pages(flow, hub_class):
    response = hub_class.servers[hc.INSTRUCTOR].request("GET", FORMGRADER)
    csp = response.headers.get("Content-Security-Policy")
    say(f"{hc.INSTRUCTOR}: formgrader", f"{response.status_code}, {csp}")
    assert response.status_code == 200 and csp == "frame-ancestors 'self'"


def test_the_formgrader_in_a_browser(flow, hub_class):
    from browser.formgrader_check import check_formgrader

    password = hub_class.passwords[hc.INSTRUCTOR]
    row, table = check_formgrader(hub_class.hub.url, hc.INSTRUCTOR, password, LAB, ADA)
    say("browser: formgrader lists the lab", " ".join(row.split()))
    students = [student for student in hc.STUDENTS if student in table]
    say("browser: its submissions page lists", ", ".join(students))
    assert students == list(hc.STUDENTS)
