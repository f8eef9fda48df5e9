"""The rules of deploy/lti_login.py that need no hub: roles, accounts, the LMS course, the lab,
the record of launches and where a launch lands."""

import grp
import os
import pwd
import sys
from dataclasses import replace

import pytest

from course.coursedir import paths
from course.lms import launches
from course.lms.launches import LinkedCourse

sys.path.insert(0, str(paths.ROOT / "deploy"))
import lti_login  # noqa: E402 - deploy/ is not a package

CLAIM = lti_login.CLAIM
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
TEACHER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
ADMIN = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"


@pytest.mark.parametrize(
    ("roles", "expected"),
    [([LEARNER], "student"), ([TEACHER, ADMIN], "instructor"), ([TA], "instructor"),
     ([ADMIN], "instructor"), (["http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"], None),
     ([], None)],
)  # fmt: skip
def test_the_launchs_roles_map_to_the_courses(roles, expected):
    assert lti_login.course_role(roles) == expected


def test_an_account_must_exist_and_match_the_role():
    me = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(pwd.getpwuid(os.getuid()).pw_gid).gr_name
    assert "no account 'attn-nobody-here'" in lti_login.account_problem(
        "attn-nobody-here", "student"
    )
    assert lti_login.account_problem(me, "student", instructor=me).startswith(
        "a launch as a student"
    )
    assert "not a student of this class" in lti_login.account_problem(me, "student", "someone")
    assert lti_login.is_student(me, group)


@pytest.mark.parametrize(
    ("claims", "lab"),
    [({CLAIM + "custom": {"lab": "01_softmax", "uname": "ada"}}, "01_softmax"),
     ({CLAIM + "target_link_uri": "https://hub.example/hub/?lab=02_attention"}, "02_attention"),
     ({CLAIM + "custom": {"uname": "ada"}}, "")],
)  # fmt: skip
def test_the_lab_comes_from_the_custom_parameter_or_the_tool_url(claims, lab):
    assert lti_login.launched_lab(claims) == lab


def test_a_malformed_lab_is_refused_with_a_reason():
    with pytest.raises(lti_login.web.HTTPError) as refused:
        lti_login.launched_lab({CLAIM + "custom": {"lab": "../../etc"}})
    assert "This launch from your LMS was refused" in refused.value.log_message


def test_a_launch_lands_in_the_users_server_at_the_lab():
    url = lti_login.landing_url("/", "/hub/", "attn-ada", "01_softmax")
    assert url == "/hub/spawn/attn-ada?next=%2Fuser%2Fattn-ada%2Fcourse-lab%2F01_softmax"
    assert lti_login.landing_url("/", "/hub/", "attn-ada", "") == "/hub/spawn/attn-ada"


def test_an_instructors_launch_lands_in_the_formgrader_or_on_the_grades_page():
    def landing(name, lab):
        return lti_login.landing_url("/", "/hub/", name, lab, "instructor", "teacher")

    assert landing("teacher", "01_softmax") == (
        "/hub/spawn/teacher?next=%2Fuser%2Fteacher%2Fformgrader%2Fmanage_submissions%2F01_softmax"
    )
    assert (
        landing("teacher", "") == "/hub/spawn/teacher?next=%2Fuser%2Fteacher%2Fcourse-lti%2Fgrades"
    )
    assert landing("ta", "01_softmax") == "/user/teacher/formgrader/manage_submissions/01_softmax"


ATTN = LinkedCourse("2", "ATTN", "Attention, Step by Step")
SANDBOX = LinkedCourse("3", "SANDBOX", "Sandbox for teachers")


def test_a_launch_from_another_lms_course_is_refused_naming_both():
    linked = replace(ATTN, deployment_id="1")
    problem = lti_login.context_problem(linked, SANDBOX, "1", "student")
    assert '"Attention, Step by Step" (ATTN, id 2)' in problem
    assert '"Sandbox for teachers" (SANDBOX, id 3)' in problem
    assert lti_login.context_problem(linked, SANDBOX, "1", "instructor") == problem
    assert lti_login.context_problem(linked, ATTN, "1", "student") == ""
    assert "deployment '7'" in lti_login.context_problem(linked, ATTN, "7", "student")


def test_only_an_instructor_links_the_course_to_its_lms_course():
    assert lti_login.context_problem(None, ATTN, "1", "instructor") == ""
    assert "not linked to an LMS course yet" in lti_login.context_problem(
        None, ATTN, "1", "student"
    )
    assert "no LMS course" in lti_login.context_problem(None, LinkedCourse(""), "1", "instructor")
    configured = LinkedCourse("2")
    assert lti_login.context_problem(configured, ATTN, "1", "student") == ""
    assert "(SANDBOX, id 3)" in lti_login.context_problem(configured, SANDBOX, "1", "student")
    assert configured.name == "id 2"


@pytest.fixture
def private_folder(tmp_path, monkeypatch):
    """<course>/lti/ in a temporary folder, owned by whoever runs the tests."""
    me = pwd.getpwuid(os.getuid()).pw_name
    monkeypatch.setattr(lti_login.class_settings, "INSTRUCTOR", me)
    monkeypatch.setattr(lti_login, "lti_folder", lambda: tmp_path)
    return tmp_path


def launch_claims(user, course, link, lineitem):
    """The claims of a launch that matter to the record."""
    return {
        "sub": user,
        CLAIM + "context": {"id": course.id, "label": course.label, "title": course.title},
        CLAIM + "resource_link": {"id": link},
        lti_login.AGS_CLAIM: {"lineitem": lineitem},
    }


def test_a_launch_from_another_course_never_replaces_this_courses_lineitem(private_folder):
    platform = launches.LtiPlatform("i", "c", "1", "t")
    lti_login.record_launch("ada", launch_claims("3", ATTN, "7", "L5"), "01_softmax", platform)
    lti_login.record_launch("ada", launch_claims("3", SANDBOX, "20", "L40"), "01_softmax", platform)
    _, recorded = launches.read_launches(private_folder)
    assert {(launch.context, launch.link, launch.lineitem) for launch in recorded} == {
        ("2", "7", "L5"), ("3", "20", "L40")}  # fmt: skip
    assert oct((private_folder / launches.LAUNCHES_FILE).stat().st_mode & 0o777) == "0o600"


def test_the_link_is_made_once_and_completed_after_the_configuration(private_folder):
    lti_login.link_from_configuration("2")
    configured = launches.read_link(private_folder)
    assert configured.linked_by == "COURSE_LTI_CONTEXT_ID" and configured.title == ""
    completed = lti_login.link_course(configured, ATTN, "1", "ada")
    assert completed.title == ATTN.title and completed.linked_by == "COURSE_LTI_CONTEXT_ID"
    assert lti_login.link_course(completed, ATTN, "1", "teacher") == completed
    assert launches.read_link(private_folder) == completed


def test_a_refusal_gives_its_message_once_under_a_short_heading():
    error = lti_login.refused(403, "100% wrong.")
    assert error.reason == "Launch refused"
    assert error.jupyterhub_message == error.get_message()
    assert error.jupyterhub_message.startswith(
        "This launch from your LMS was refused: 100% wrong. Open"
    )


def test_the_platform_settings_are_all_required():
    with pytest.raises(SystemExit) as missing:
        lti_login.platform_settings({"COURSE_LTI_ISSUER": "https://moodle.example"})
    assert "COURSE_LTI_CLIENT_ID" in str(missing.value)
    settings = {name: "x" for name in lti_login.SETTINGS.values()}
    with pytest.raises(SystemExit) as no_key:
        lti_login.platform_settings(settings)
    assert "JUPYTERHUB_CRYPT_KEY" in str(no_key.value)


def test_the_served_keys_are_the_ones_the_grades_are_signed_with(tmp_path):
    from course.lms import lti

    key = lti.tool_key(tmp_path)
    assert lti_login.public_jwks(key) == lti.jwks(tmp_path)


def test_the_grades_page_names_the_linked_lms_course(tmp_path):
    import lti_grades_page

    assert "not linked to an LMS course yet" in lti_grades_page.linked_course(tmp_path)
    linked = replace(ATTN, deployment_id="1", linked_by="teacher", time="2026-01-05")
    launches.write_link(launches.lti_folder(tmp_path), linked)
    paragraph = lti_grades_page.linked_course(tmp_path)
    assert "<b>&quot;Attention, Step by Step&quot; (ATTN, id 2)</b>" in paragraph
    assert "deployment 1, linked\nby teacher on 2026-01-05" in paragraph
