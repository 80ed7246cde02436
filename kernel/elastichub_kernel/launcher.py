"""``python -m elastichub_kernel.launcher -f {connection_file}`` (kernelspec argv)."""

from ipykernel.kernelapp import IPKernelApp

from .kernel import ElasticKernel


def main() -> None:
    IPKernelApp.launch_instance(kernel_class=ElasticKernel)


if __name__ == "__main__":
    main()
