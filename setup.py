"""Builds the native extension torch_vk._C with CMake (see CMakeLists.txt).

    pip install . --no-build-isolation        # needs the torch it will run with
    pip install -e . --no-build-isolation

Environment: TORCH_VK_BUILD_TYPE (default Release), TORCH_VK_BUILD_DIR (default build/<tag>),
MAX_JOBS (default 2), TORCH_VK_CMAKE_ARGS (extra arguments for the configure step).
"""

import glob
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        if not isinstance(ext, CMakeExtension):
            return super().build_extension(ext)
        build_type = os.environ.get("TORCH_VK_BUILD_TYPE", "Release")
        tag = f"{sysconfig.get_platform()}-{sys.implementation.cache_tag}-{build_type.lower()}"
        build_dir = os.environ.get("TORCH_VK_BUILD_DIR", os.path.join(ROOT, "build", tag))
        os.makedirs(build_dir, exist_ok=True)

        configure = [
            "cmake", "-S", ROOT, "-B", build_dir,
            f"-DCMAKE_BUILD_TYPE={build_type}",
            "-DTVK_BUILD_TESTS=OFF",
            "-DTVK_BUILD_TORCH=ON",
            f"-DPython3_EXECUTABLE={sys.executable}",
        ]
        if shutil.which("ninja") and not os.path.exists(os.path.join(build_dir, "Makefile")):
            configure += ["-G", "Ninja"]
        configure += shlex.split(os.environ.get("TORCH_VK_CMAKE_ARGS", ""))
        jobs = os.environ.get("MAX_JOBS", "2")
        subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_C", "-j", jobs])

        built = sorted(glob.glob(os.path.join(build_dir, "**", "_C*.so"), recursive=True),
                       key=os.path.getmtime)
        if not built:
            raise RuntimeError(f"torch-vk: the CMake build produced no _C*.so in {build_dir}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[-1], target)
        shutil.copymode(built[-1], target)


setup(
    ext_modules=[CMakeExtension("torch_vk._C")],
    cmdclass={"build_ext": CMakeBuild},
)
