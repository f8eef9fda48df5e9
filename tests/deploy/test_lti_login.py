"""The rules of deploy/lti_login.py that need no hub: roles, accounts, the lab, the landing."""

import grp
import os
import pwd
import sys

import pytest

from course.coursedir import paths

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
