"""JupyterHub for the class, with students launched from their LMS by LTI 1.3 (LTI Advantage).

deploy/jupyterhub_config.py (servers, roles, the class's settings), with LTI 1.3 for login in
place of PAM: a student clicks the lab's activity in Moodle or Canvas and lands in their own
server, logged in, with the lab fetched for them (deploy/lti_lab.py); the instructor lands in
the formgrader. The platform is given by the hub's environment (the README, "LTI 1.3", says
where each value is found in the LMS):

    COURSE_LTI_ISSUER         the platform's issuer (Moodle: its URL; Canvas: https://canvas.instructure.com)
    COURSE_LTI_CLIENT_ID      the tool's client id, which the LMS gave at registration
    COURSE_LTI_DEPLOYMENT_ID  the deployment id (several: comma-separated)
    COURSE_LTI_AUTH_URL       the OIDC login (Moodle: .../mod/lti/auth.php)
    COURSE_LTI_TOKEN_URL      the token endpoint (Moodle: .../mod/lti/token.php)
    COURSE_LTI_JWKS_URL       the platform's keys (Moodle: .../mod/lti/certs.php)
    JUPYTERHUB_CRYPT_KEY      encrypts each user's auth_state (openssl rand -hex 32)

and, if wanted:

    COURSE_LTI_CONTEXT_ID     the LMS course the hub serves (Moodle: the course's id); without
                              it, the first instructor's launch links the course to its LMS course
    COURSE_LTI_GRADERS_FROM_LMS=1   a teaching assistant's launch adds them to the graders' group

    jupyterhub -f deploy/jupyterhub_lti_config.py

Each Unix account is named as the LMS's username (Moodle: the custom parameter
`uname=$User.username`). deploy/lti_login.py checks the launch and records it for grades back.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lti_login  # noqa: E402 - found beside this file

c = get_config()  # noqa: F821 - provided by JupyterHub when it loads this file
load_subconfig(str(Path(__file__).with_name("jupyterhub_config.py")))  # noqa: F821
lti_login.configure(c)
