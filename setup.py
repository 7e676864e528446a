"""Only a fix to setuptools' editable install; everything else is in pyproject.toml.

``pip install -e .`` leaves out data files: setuptools' editable_wheel asks the
distribution ``has_data()``, which does not exist (the method is ``has_data_files``), so
``man sse-tool`` finds no page after an editable install (setuptools issue 3399). This
installs them as a plain install does; a setuptools that runs install_data itself makes
the call below a no-op (a command runs once).
"""

from setuptools import setup
from setuptools.command.editable_wheel import editable_wheel


class EditableWheelWithData(editable_wheel):
    def _run_install(self, category: str) -> None:
        super()._run_install(category)
        if category == "data" and self.distribution.has_data_files():
            self.run_command("install_data")


setup(cmdclass={"editable_wheel": EditableWheelWithData})
