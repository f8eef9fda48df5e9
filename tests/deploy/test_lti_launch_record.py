"""The record of launches (course/lms/launches.py) across its three processes: written by the
hub (deploy/lti_login.py), read by the grade sender (course/lms/lti.py) and the instructor's
grades page (deploy/lti_grades_page.py); and a record the hub wrote before still reads."""

import json
import os
import pwd
import sys

import pytest

from course.coursedir import paths
from course.lms import launches, lti

sys.path.insert(0, str(paths.ROOT / "deploy"))
import lti_grades_page  # noqa: E402 - deploy/ is found by path, as on the hub
import lti_login  # noqa: E402

CLAIM = lti_login.CLAIM
PLATFORM = launches.LtiPlatform("https://moodle.example", "c1", "1",
                                "https://moodle.example/mod/lti/token.php")
ATTN = {"id": "2", "label": "ATTN", "title": "Attention, Step by Step"}
SERVICE = "https://moodle.example/mod/lti/services.php/2/lineitems?type_id=1"
SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score"]  # fmt: skip


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A course folder whose lti/ the hub's functions write, as whoever runs the tests."""
    me = pwd.getpwuid(os.getuid()).pw_name
    monkeypatch.setattr(lti_login.class_settings, "INSTRUCTOR", me)
    monkeypatch.setattr(lti_login, "lti_folder", lambda: launches.lti_folder(tmp_path))
    return tmp_path


def claims(sub, link, item, context=ATTN):
    """A launch's claims, with its AGS endpoint, from the activity `link` of `context`."""
    lineitem = f"https://moodle.example/mod/lti/services.php/2/lineitems/{item}/lineitem?type_id=1"
    return {
        "sub": sub,
        CLAIM + "context": context,
        CLAIM + "resource_link": {"id": link},
        lti_login.AGS_CLAIM: {"lineitem": lineitem, "lineitems": SERVICE, "scope": SCOPES},
    }


def test_a_launch_the_hub_records_is_what_the_grades_read(course):
    teacher = claims("1", "7", "5")
    lti_login.link_course(None, lti_login.context_of(teacher), "1", "teacher")
    lti_login.record_launch("teacher", teacher, "01_softmax", PLATFORM)
    lti_login.record_launch("ada", claims("3", "7", "5"), "01_softmax", PLATFORM)
    elsewhere = {"id": "3", "label": "SANDBOX", "title": "Sandbox"}
    lti_login.record_launch("ada", claims("30", "20", "40", elsewhere), "01_softmax", PLATFORM)

    platform, course_launches = lti.recorded(course)
    assert platform == PLATFORM
    assert lti.lms_users(course_launches) == {"teacher": "1", "ada": "3"}  # not SANDBOX's "30"
    links = lti.lab_links(course_launches, "01_softmax")
    assert list(links) == ["7"] and links["7"].lineitem.endswith("/5/lineitem?type_id=1")
    assert lti.service_of(course_launches) == (SERVICE, SCOPES)
    page = lti_grades_page.linked_course(course)
    assert '<b>&quot;Attention, Step by Step&quot; (ATTN, id 2)</b> (deployment 1' in page
    assert "by teacher on 20" in page


def test_a_record_the_hub_wrote_before_still_reads_and_keeps_its_launches(tmp_path):
    folder = launches.lti_folder(tmp_path)
    entry = {"lineitem": "L5", "lineitems": SERVICE, "scope": SCOPES, "sub": "3",
             "time": "2026-12-01T09:00:00+00:00"}  # fmt: skip
    platform = {"client_id": "c1", "deployment_id": "1", "issuer": "https://moodle.example",
                "token_url": "https://moodle.example/mod/lti/token.php"}  # fmt: skip
    written = {"platform": platform, "launches": {"2": {"ada": {"01_softmax": {"7": entry}}}}}
    (folder / "launches.json").write_text(json.dumps(written, indent=1, sort_keys=True))
    linked = {**ATTN, "deployment_id": "1", "linked_by": "teacher", "time": "2026-12-01T08:59:00"}
    (folder / "lms_course.json").write_text(json.dumps(linked))

    platform, recorded = lti.recorded(tmp_path)
    assert platform == PLATFORM
    assert recorded == [launches.Launch("2", "ada", "01_softmax", "7", "3", "L5", SERVICE,
                                        tuple(SCOPES), entry["time"])]  # fmt: skip
    assert launches.read_link(folder) == launches.LinkedCourse(**linked)
    later = launches.Launch("2", "alan", "01_softmax", "7", "4", time="2026-12-01T09:01:00+00:00")
    launches.record_launch(folder, later, PLATFORM)
    kept = json.loads((folder / "launches.json").read_text())
    assert kept["launches"]["2"]["ada"] == written["launches"]["2"]["ada"]
    assert set(kept["launches"]["2"]["alan"]["01_softmax"]["7"]) == set(entry)


def test_a_launch_without_an_ags_claim_is_recorded_with_no_column(course):
    bare = {"sub": "3", CLAIM + "context": ATTN, CLAIM + "resource_link": {"id": "7"}}
    lti_login.record_launch("ada", bare, "", PLATFORM)
    _, [launch] = launches.read_launches(launches.lti_folder(course))
    assert (launch.lab, launch.lineitem, launch.lineitems, launch.scope) == ("", "", "", ())
